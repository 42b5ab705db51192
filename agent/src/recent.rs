//! Answers about the agent's cluster that change rarely (does this service account exist,
//! does this namespace), kept for a while so that every reconcile does not ask again.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long an answer is trusted.
pub const RECHECK: Duration = Duration::from_secs(60);

/// Answers by name, each with when it was found.
#[derive(Debug)]
pub struct Recent<T> {
    found: Mutex<HashMap<String, (T, Instant)>>,
}

impl<T> Default for Recent<T> {
    fn default() -> Self {
        Self {
            found: Mutex::default(),
        }
    }
}

impl<T: Clone> Recent<T> {
    /// The answer about `name`, if one was found under `within` ago.
    pub fn get(&self, name: &str, within: Duration) -> Option<T> {
        let found = self.found.lock().ok()?;
        let (answer, when) = found.get(name)?;
        (when.elapsed() < within).then(|| answer.clone())
    }

    /// Keeps `answer` about `name`, found now.
    pub fn remember(&self, name: &str, answer: T) {
        if let Ok(mut found) = self.found.lock() {
            found.insert(name.to_string(), (answer, Instant::now()));
        }
    }

    /// Drops what was found about `name`: the next reconcile asks again.
    pub fn forget(&self, name: &str) {
        if let Ok(mut found) = self.found.lock() {
            found.remove(name);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_kept_until_forgotten() {
        let recent = Recent::default();
        assert_eq!(recent.get("a", RECHECK), None);
        recent.remember("a", true);
        assert_eq!(recent.get("a", RECHECK), Some(true));
        assert_eq!(recent.get("a", Duration::ZERO), None, "too old");
        recent.forget("a");
        assert_eq!(recent.get("a", RECHECK), None);
    }
}
