//! Status conditions as Fleet's controllers write them.

use fleet_api::Condition;

/// Sets condition `type_` in `conditions`, keeping its transition time when its status
/// does not change, and leaving it untouched when nothing about it changes.
pub fn set_condition(
    conditions: &mut Vec<Condition>,
    type_: &str,
    ok: bool,
    reason: &str,
    message: &str,
    now: &str,
) {
    let status = if ok { "True" } else { "False" };
    let previous = conditions.iter().position(|c| c.type_ == type_);
    let reason_text = Some(reason.to_string()).filter(|r| !r.is_empty());
    let message_text = Some(message.to_string()).filter(|m| !m.is_empty());
    let unchanged = previous.is_some_and(|i| {
        let old = &conditions[i];
        old.status == status && old.reason == reason_text && old.message == message_text
    });
    if unchanged {
        // Nothing to say: an unchanged condition writes nothing (and wakes no watcher).
        return;
    }
    let transition = match previous.map(|i| &conditions[i]) {
        Some(old) if old.status == status => old.last_transition_time.clone(),
        _ => Some(now.to_string()),
    };
    let condition = Condition {
        type_: type_.to_string(),
        status: status.to_string(),
        last_update_time: Some(now.to_string()),
        last_transition_time: transition,
        reason: reason_text,
        message: message_text,
    };
    match previous {
        Some(i) => conditions[i] = condition,
        None => conditions.push(condition),
    }
}
