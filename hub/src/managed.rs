//! `metadata.managedFields`: who owns which fields, updated on every write, and
//! server-side apply with conflicts reported as Kubernetes reports them.

use serde_json::{json, Map, Value};

use crate::fields::{remove_at, value_at, Changes, FieldPath, FieldSet, Lists};
use crate::status::{ApiError, ApiResult, Cause};

/// One `managedFields` entry.
#[derive(Debug, Clone, PartialEq)]
struct Entry {
    manager: String,
    operation: String,
    api_version: String,
    time: String,
    subresource: String,
    /// Its fields as a set; `None` while they are read only from `read`'s `fieldsV1`
    /// (most writes leave most entries alone, and need not turn them into sets).
    fields: Option<FieldSet>,
    /// The entry as it was read from the live object, kept while nothing in it changes:
    /// it is then written back as it is, not rebuilt from its field set.
    read: Option<Value>,
}

impl Entry {
    fn parse(value: &Value) -> Option<Self> {
        let fields = FieldSet::from_v1(value.get("fieldsV1")?);
        Some(Self {
            fields: Some(fields),
            ..Self::named(value)?
        })
    }

    /// The entry's names and time from `value`, its fields left unread.
    fn named(value: &Value) -> Option<Self> {
        value.get("fieldsV1")?;
        let text = |key: &str| {
            value
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        Some(Self {
            manager: text("manager"),
            operation: text("operation"),
            api_version: text("apiVersion"),
            time: text("time"),
            subresource: text("subresource"),
            fields: None,
            read: None,
        })
    }

    /// The entry in `value`, kept to write back while the entry is unchanged; its fields
    /// are read from it when first needed.
    fn keeping(value: Value) -> Option<Self> {
        let entry = Self::named(&value)?;
        Some(Self {
            read: Some(value),
            ..entry
        })
    }

    /// The `fieldsV1` tree the entry was read with.
    fn read_tree(&self) -> Option<&Value> {
        self.read.as_ref().and_then(|read| read.get("fieldsV1"))
    }

    /// The entry's fields as a set, made from the entry as read if need be.
    fn field_set(&mut self) -> &mut FieldSet {
        if self.fields.is_none() {
            let fields = self.read_tree().map(FieldSet::from_v1).unwrap_or_default();
            self.fields = Some(fields);
        }
        self.fields.get_or_insert_with(FieldSet::default)
    }

    /// Whether the entry owns `path`.
    fn holds(&self, path: &FieldPath) -> bool {
        match (&self.fields, self.read_tree()) {
            (Some(fields), _) => fields.0.contains(path),
            (None, Some(tree)) => crate::fields::v1_holds(tree, path),
            (None, None) => false,
        }
    }

    /// Whether the entry owns no field.
    fn is_empty(&self) -> bool {
        match (&self.fields, self.read_tree()) {
            (Some(fields), _) => fields.is_empty(),
            (None, tree) => tree
                .and_then(Value::as_object)
                .is_none_or(|children| children.is_empty()),
        }
    }

    /// Takes `path` out of the entry's fields (the entry is then written anew).
    fn release(&mut self, path: &FieldPath) {
        if self.holds(path) {
            self.field_set().0.remove(path);
            self.read = None;
        }
    }

    /// Adds `paths` to the entry's fields (the entry is written anew if any is new).
    fn claim(&mut self, paths: impl IntoIterator<Item = FieldPath>) {
        for path in paths {
            // Asked of the entry as read first: a writer that changes the fields it owns
            // already (a status written again) leaves its entry unread and unrebuilt.
            if !self.holds(&path) {
                self.field_set().0.insert(path);
                self.read = None;
            }
        }
    }

    /// Records a write by `api_version` now, in the entry as read too, when it is kept.
    fn stamp(&mut self, api_version: &str) {
        self.time = crate::meta::now();
        self.api_version = api_version.to_string();
        if let Some(Value::Object(read)) = &mut self.read {
            read.insert("time".into(), Value::String(self.time.clone()));
            read.insert("apiVersion".into(), Value::String(self.api_version.clone()));
        }
    }

    /// The entry as written to `managedFields`: as it was read while unchanged, else
    /// built from its fields (moved, not copied).
    fn into_json(self) -> Value {
        if let Some(read) = self.read {
            return read;
        }
        let mut entry = Map::new();
        entry.insert("manager".into(), Value::String(self.manager));
        entry.insert("operation".into(), Value::String(self.operation));
        entry.insert("apiVersion".into(), Value::String(self.api_version));
        entry.insert("time".into(), Value::String(self.time));
        entry.insert("fieldsType".into(), Value::from("FieldsV1"));
        let fields = self.fields.unwrap_or_default();
        entry.insert("fieldsV1".into(), fields.to_v1());
        if !self.subresource.is_empty() {
            entry.insert("subresource".into(), Value::String(self.subresource));
        }
        Value::Object(entry)
    }

    fn is(&self, manager: &str, operation: &str, subresource: &str) -> bool {
        self.manager == manager && self.operation == operation && self.subresource == subresource
    }
}

/// Who writes, and through which endpoint.
#[derive(Debug, Clone)]
pub(crate) struct Writer<'a> {
    /// The field manager.
    pub manager: &'a str,
    /// The apiVersion the request used.
    pub api_version: &'a str,
    /// `status` for the status subresource, empty for the main resource.
    pub subresource: &'a str,
    /// How lists are keyed.
    pub lists: Lists,
}

/// The entries of a `managedFields` list.
fn entries_in(managed: Option<&Value>) -> Vec<Entry> {
    managed
        .and_then(Value::as_array)
        .map(|items| items.iter().filter_map(Entry::parse).collect())
        .unwrap_or_default()
}

/// The entries an update starts from, as Kubernetes chooses them: the ones the client sent,
/// when it sent a list that differs from the live one (clients may edit managedFields, and
/// `[{}]` clears them); otherwise the live ones, so that a client unaware of the field
/// cannot erase it by leaving it out. Writes to a subresource always keep the live ones.
/// The list sent is taken out of `new` (left null); [`store_entries`] puts one back.
fn base_entries(old: Option<&Value>, new: &mut Value, writer: &Writer) -> Vec<Entry> {
    let live = old.and_then(|o| crate::meta::meta_field(o, "managedFields"));
    let sent = (new.get_mut("metadata"))
        .and_then(|m| m.get_mut("managedFields"))
        .map(Value::take);
    match sent {
        // The live list, sent back as it is (a patch edits a copy of the live object): the
        // live entries, each written back unrebuilt while it does not change.
        Some(Value::Array(items))
            if live
                .and_then(Value::as_array)
                .is_some_and(|live| crate::json::lists_equal(live, &items)) =>
        {
            kept_as_read(items)
        }
        Some(sent)
            if sent.as_array().is_some_and(|items| !items.is_empty())
                && writer.subresource.is_empty() =>
        {
            entries_in(Some(&sent))
        }
        // The live entries, each read only if the write changes it.
        _ => kept_as_read(
            live.and_then(Value::as_array)
                .into_iter()
                .flatten()
                .cloned(),
        ),
    }
}

/// The entries `items`, each kept to be written back as it is while it does not change
/// ([`Entry::keeping`]).
fn kept_as_read(items: impl IntoIterator<Item = Value>) -> Vec<Entry> {
    items.into_iter().filter_map(Entry::keeping).collect()
}

fn store_entries(object: &mut Value, entries: Vec<Entry>) {
    let list: Vec<Value> = entries
        .into_iter()
        .filter(|e| !e.is_empty())
        .map(Entry::into_json)
        .collect();
    if let Some(meta) = crate::meta::metadata_mut(object) {
        if list.is_empty() {
            meta.remove("managedFields");
        } else {
            meta.insert("managedFields".into(), Value::Array(list));
        }
    }
}

/// A copy of `object` without `metadata.managedFields`, and its entries, each kept to be
/// written back as it is while it does not change.
fn split_managed_fields(object: &Value) -> (Value, Vec<Entry>) {
    let mut copy = object.clone();
    let managed = copy
        .get_mut("metadata")
        .and_then(Value::as_object_mut)
        .and_then(|meta| meta.remove("managedFields"));
    let entries = match managed {
        Some(Value::Array(items)) => kept_as_read(items),
        _ => Vec::new(),
    };
    (copy, entries)
}

fn own(entries: &mut Vec<Entry>, writer: &Writer, operation: &str) -> usize {
    match entries
        .iter()
        .position(|e| e.is(writer.manager, operation, writer.subresource))
    {
        Some(index) => index,
        None => {
            entries.push(Entry {
                manager: writer.manager.to_string(),
                operation: operation.to_string(),
                api_version: writer.api_version.to_string(),
                time: String::new(),
                subresource: writer.subresource.to_string(),
                fields: Some(FieldSet::default()),
                read: None,
            });
            entries.len() - 1
        }
    }
}

/// Records a create, update or patch by `writer`: the fields it changed become its own.
pub(crate) fn record_update(old: Option<&Value>, new: &mut Value, writer: &Writer) {
    let list = base_entries(old, new, writer);
    // Field paths leave managedFields out, so neither object needs a copy without them.
    let changes = match old {
        Some(old) => Changes::between(old, new, writer.lists),
        None => Changes {
            changed: FieldSet::of(new, writer.lists).0,
            removed: Default::default(),
        },
    };
    record_changes(new, list, changes, writer);
}

/// [`record_update`] of a status write made in place: `new` is the stored object itself
/// with only its status edited (it was `old_status`), managedFields as stored.
pub(crate) fn record_status_update(old_status: Option<&Value>, new: &mut Value, writer: &Writer) {
    let stored = (new.get_mut("metadata"))
        .and_then(|m| m.get_mut("managedFields"))
        .map(Value::take);
    // The live entries, as `base_entries` keeps them for any write to a subresource.
    let list = match stored {
        Some(Value::Array(items)) => kept_as_read(items),
        _ => Vec::new(),
    };
    let changes = Changes::of_member("status", old_status, new.get("status"), writer.lists);
    record_changes(new, list, changes, writer);
}

/// Gives `writer` the fields `changes` names, taking them from the other entries of
/// `list`, and stores the entries in `new`.
fn record_changes(new: &mut Value, mut list: Vec<Entry>, changes: Changes, writer: &Writer) {
    let Changes { changed, removed } = changes;
    if changed.is_empty() && removed.is_empty() {
        store_entries(new, list);
        return;
    }
    let index = own(&mut list, writer, "Update");
    for (at, entry) in list.iter_mut().enumerate() {
        let taken = (at != index).then_some(&changed);
        for path in removed.iter().chain(taken.into_iter().flatten()) {
            entry.release(path);
        }
    }
    list[index].claim(changed);
    list[index].stamp(writer.api_version);
    store_entries(new, list);
}

/// Server-side apply of `applied` by `writer` onto `live` (or onto nothing, for a create).
pub(crate) fn apply(
    live: Option<&Value>,
    applied: &Value,
    writer: &Writer,
    force: bool,
) -> ApiResult<Value> {
    let (live_value, mut list) = live
        .map(split_managed_fields)
        .unwrap_or_else(|| (json!({}), Vec::new()));
    let applied_fields = FieldSet::of(applied, writer.lists);

    let mut conflicts = Vec::new();
    for entry in list.iter_mut().filter(|e| {
        !e.is(writer.manager, "Apply", writer.subresource) && e.subresource == writer.subresource
    }) {
        let clashing: Vec<FieldPath> = (applied_fields.0.iter())
            .filter(|p| entry.holds(p))
            .filter(|p| p.last().is_some_and(|l| l != "."))
            .filter(|p| !crate::json::options_equal(value_at(&live_value, p), value_at(applied, p)))
            .cloned()
            .collect();
        if force {
            for path in &clashing {
                entry.release(path);
            }
        } else {
            conflicts.extend(clashing.iter().map(|p| Cause {
                kind: "FieldManagerConflict".into(),
                message: format!(
                    "conflict with \"{}\" using {}",
                    entry.manager, entry.api_version
                ),
                field: dotted(p),
            }));
        }
    }
    if !conflicts.is_empty() {
        return Err(ApiError::apply_conflicts(conflicts));
    }

    let index = own(&mut list, writer, "Apply");
    // An applier applying the very fields it owns (agents and controllers re-apply on every
    // pass) is found so from its entry as read, which is then not made a set.
    let owns_applied = list[index]
        .read_tree()
        .is_some_and(|tree| *tree == applied_fields.to_v1());
    // The applier's own fields, taken out while the others are asked about theirs; its
    // entry gets the applied ones below.
    let owned = if owns_applied {
        FieldSet::default()
    } else {
        std::mem::take(list[index].field_set())
    };
    let owned_by_others =
        |path: &FieldPath| (list.iter().enumerate()).any(|(at, e)| at != index && e.holds(path));
    let mut released: Vec<&FieldPath> = (owned.0)
        .difference(&applied_fields.0)
        .filter(|p| !owned_by_others(p))
        .collect();
    released.sort_by_key(|p| std::cmp::Reverse(p.len()));
    let mut result = live_value;
    for path in released {
        remove_at(&mut result, path);
    }
    merge(&mut result, applied, writer.lists, "");
    // Applying the same fields again changes nothing, not even the entry's time: a no-op
    // apply must not write (agents re-apply everything on every pass).
    let entry = &mut list[index];
    let same_fields = owns_applied || owned == applied_fields;
    if !same_fields {
        // Written anew, from its new fields.
        entry.read = None;
    }
    entry.fields = Some(applied_fields);
    let same = same_fields && entry.api_version == writer.api_version;
    if !same || entry.time.is_empty() {
        entry.stamp(writer.api_version);
    }
    store_entries(&mut result, list);
    Ok(result)
}

/// `.spec.containers[name="web"].image` for a path, as Kubernetes prints conflict fields.
fn dotted(path: &[String]) -> String {
    let mut text = String::new();
    for element in path {
        if let Some(field) = element.strip_prefix("f:") {
            text.push('.');
            text.push_str(field);
        } else if let Some(keys) = element.strip_prefix("k:") {
            let keys: Map<String, Value> = serde_json::from_str(keys).unwrap_or_default();
            let inner: Vec<String> = keys.iter().map(|(k, v)| format!("{k}={v}")).collect();
            text.push_str(&format!("[{}]", inner.join(",")));
        } else if let Some(value) = element.strip_prefix("v:") {
            text.push_str(&format!("[={value}]"));
        }
    }
    text
}

/// Merges an applied configuration into an object: maps field by field, keyed lists item
/// by item, everything else replaced.
fn merge(target: &mut Value, applied: &Value, lists: Lists, field: &str) {
    match (target, applied) {
        (Value::Object(target), Value::Object(applied)) => {
            for (key, value) in applied {
                match target.get_mut(key) {
                    Some(existing) => merge(existing, value, lists, key),
                    None => {
                        target.insert(key.clone(), value.clone());
                    }
                }
            }
        }
        (Value::Array(target), Value::Array(applied)) => merge_list(target, applied, lists, field),
        (target, applied) => *target = applied.clone(),
    }
}

fn merge_list(target: &mut Vec<Value>, applied: &[Value], lists: Lists, field: &str) {
    use fleet_objects::smp;
    if smp::is_set_list(field) {
        for item in applied {
            if !target.contains(item) {
                target.push(item.clone());
            }
        }
        return;
    }
    let key = match lists {
        Lists::BuiltIn => smp::merge_key(field, applied),
        Lists::Atomic => None,
    };
    let Some(key) = key.filter(|k| applied.iter().all(|i| i.get(*k).is_some())) else {
        *target = applied.to_vec();
        return;
    };
    for item in applied {
        match target.iter_mut().find(|t| t.get(key) == item.get(key)) {
            Some(existing) => merge(existing, item, lists, ""),
            None => target.push(item.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn writer(manager: &str) -> Writer<'_> {
        Writer {
            manager,
            api_version: "v1",
            subresource: "",
            lists: Lists::BuiltIn,
        }
    }

    #[test]
    fn apply_conflicts_with_another_manager_unless_forced() {
        let mut live = json!({"apiVersion": "v1", "kind": "ConfigMap",
                              "metadata": {"name": "c"}, "data": {"a": "1", "b": "2"}});
        record_update(None, &mut live, &writer("kubectl-edit"));
        let applied = json!({"apiVersion": "v1", "kind": "ConfigMap",
                             "metadata": {"name": "c"}, "data": {"a": "9"}});
        let error =
            apply(Some(&live), &applied, &writer("fleet-agent"), false).expect_err("conflict");
        assert_eq!(error.code, 409);
        assert_eq!(
            error.message,
            "Apply failed with 1 conflict: conflict with \"kubectl-edit\" using v1: .data.a"
        );
        let forced = apply(Some(&live), &applied, &writer("fleet-agent"), true).expect("forced");
        assert_eq!(forced["data"], json!({"a": "9", "b": "2"}));
        let managers: Vec<String> = entries_in(forced.pointer("/metadata/managedFields"))
            .into_iter()
            .map(|e| e.manager)
            .collect();
        assert_eq!(managers, ["kubectl-edit", "fleet-agent"]);
    }

    #[test]
    fn fields_an_applier_stops_applying_are_removed() {
        let first = json!({"metadata": {"name": "c"}, "data": {"a": "1", "b": "2"}});
        let live = apply(None, &first, &writer("fleet-agent"), false).expect("created");
        let second = json!({"metadata": {"name": "c"}, "data": {"a": "1"}});
        let live = apply(Some(&live), &second, &writer("fleet-agent"), false).expect("applied");
        assert_eq!(live["data"], json!({"a": "1"}));
    }

    #[test]
    fn containers_merge_by_name() {
        let first = json!({"spec": {"containers": [{"name": "a", "image": "1"}]}});
        let live = apply(None, &first, &writer("one"), false).expect("created");
        let second = json!({"spec": {"containers": [{"name": "b", "image": "2"}]}});
        let live = apply(Some(&live), &second, &writer("two"), false).expect("applied");
        assert_eq!(live["spec"]["containers"].as_array().map(Vec::len), Some(2));
    }

    /// An entry as written by another server, its fields out of the order this hub writes.
    fn foreign_entry() -> Value {
        json!({"manager": "ctl", "operation": "Apply", "apiVersion": "v1",
               "time": "2026-01-01T00:00:00Z", "fieldsType": "FieldsV1",
               "fieldsV1": {"f:spec": {"f:b": {}, "f:a": {}}}})
    }

    #[test]
    fn a_status_write_keeps_other_entries_as_they_were() {
        let live = json!({"metadata": {"name": "d", "managedFields": [foreign_entry()]},
                          "spec": {"a": 1, "b": 2}});
        let mut new = live.clone();
        new["status"] = json!({"ready": true});
        let status = Writer {
            subresource: "status",
            ..writer("agent")
        };
        record_update(Some(&live), &mut new, &status);
        let managed = &new["metadata"]["managedFields"];
        assert_eq!(
            serde_json::to_string(&managed[0]).expect("JSON"),
            serde_json::to_string(&foreign_entry()).expect("JSON"),
            "untouched: written back as it was"
        );
        assert_eq!(managed[1]["manager"], "agent");
        assert_eq!(managed[1]["fieldsV1"], json!({"f:status": {"f:ready": {}}}));
    }

    #[test]
    fn an_entry_that_loses_a_field_is_written_anew() {
        let live = json!({"metadata": {"name": "d", "managedFields": [foreign_entry()]},
                          "spec": {"a": 1, "b": 2}});
        let mut new = live.clone();
        new["spec"]["a"] = json!(5);
        record_update(Some(&live), &mut new, &writer("edit"));
        let managed = &new["metadata"]["managedFields"];
        assert_eq!(managed[0]["fieldsV1"], json!({"f:spec": {"f:b": {}}}));
        assert_eq!(managed[1]["manager"], "edit");
        assert_eq!(managed[1]["fieldsV1"], json!({"f:spec": {"f:a": {}}}));
    }

    #[test]
    fn a_writer_that_changes_only_values_it_owns_keeps_its_entry_as_read() {
        let ctl = Writer {
            api_version: "v1",
            ..writer("ctl")
        };
        let live = json!({"metadata": {"name": "d", "managedFields": [foreign_entry()]},
                          "spec": {"a": 1, "b": 2}});
        let applied = json!({"spec": {"a": 3, "b": 2}});
        let result = apply(Some(&live), &applied, &ctl, false).expect("applied");
        assert_eq!(result["spec"]["a"], 3);
        assert_eq!(
            serde_json::to_string(&result["metadata"]["managedFields"][0]).expect("JSON"),
            serde_json::to_string(&foreign_entry()).expect("JSON"),
            "the same fields applied: the entry as it was read, in its order"
        );

        let mut update = foreign_entry();
        update["operation"] = json!("Update");
        let live = json!({"metadata": {"name": "d", "managedFields": [update]},
                          "spec": {"a": 1, "b": 2}});
        let mut new = live.clone();
        new["spec"]["a"] = json!(4);
        record_update(Some(&live), &mut new, &ctl);
        let entry = &new["metadata"]["managedFields"][0];
        let mut expected = update.clone();
        expected["time"] = entry["time"].clone();
        assert_ne!(entry["time"], update["time"], "an update is stamped");
        assert_eq!(
            serde_json::to_string(entry).expect("JSON"),
            serde_json::to_string(&expected).expect("JSON"),
            "the same fields updated: the entry as it was read but its time"
        );
        let before = new.clone();
        new["spec"]["c"] = json!(1);
        record_update(Some(&before), &mut new, &ctl);
        let entry = &new["metadata"]["managedFields"][0];
        assert_eq!(
            entry["fieldsV1"],
            json!({"f:spec": {"f:a": {}, "f:b": {}, "f:c": {}}}),
            "a new field: the entry is written anew"
        );
    }
}
