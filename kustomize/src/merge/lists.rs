//! Lists that merge item by item, by the values of their merge keys, as kyaml merges them.
//!
//! An item is named by its keys' values written as text (`80`, `TCP`; empty when a key is
//! unset). The names of all items are gathered, the patch's first; each name's first
//! object item and first patch item are merged; the merged items form a new list, and
//! then the object's items are laid over it in their order, each replacing the item of its
//! name. So a name the object repeats keeps its first place and its last content.
//!
//! With two keys (a port and its protocol), names that differ only where one is empty
//! are the same name, and a key no item sets is not used.

use serde_json::Value;

use super::{Directive, MergeError, Walk};

impl Walk<'_> {
    pub(super) fn associative_list(
        &mut self,
        dest: Option<Value>,
        origin: Option<Value>,
        keys: &[String],
    ) -> Result<Option<Value>, MergeError> {
        let mut origin = match origin {
            Some(Value::Array(items)) => Some(items),
            // The patch's null clears the list (the walk checked nothing else is here).
            Some(_) => return Ok(None),
            None => None,
        };
        let list = match (dest, origin.as_mut()) {
            (Some(Value::Array(dest)), None) => dest,
            (Some(Value::Array(dest)), Some(patch)) => match list_directive(patch)? {
                Directive::Delete => return Ok(None),
                Directive::Replace => patch.clone(),
                Directive::Merge => dest,
            },
            (_, Some(patch)) => patch.clone(),
            (_, None) => return Ok(None),
        };
        let origin = origin.unwrap_or_default();
        // A list of scalars merges as a set, by the empty key: each item is its own name.
        let keys = match keys.is_empty() {
            true => vec![String::new()],
            false => keys.to_vec(),
        };
        let names = item_names(&keys, &origin, &list);
        self.set_items(names, &keys, list, &origin).map(Some)
    }

    /// Merges the items of each name and lays the object's items over the result.
    fn set_items(
        &mut self,
        mut names: Vec<Vec<String>>,
        keys: &[String],
        mut dest: Vec<Value>,
        origin: &[Value],
    ) -> Result<Value, MergeError> {
        if names.is_empty() {
            return Ok(Value::Array(dest));
        }
        if keys.len() > 1 {
            unify_names(&mut names);
        }
        let mut merged = Vec::new();
        let mut used_keys = keys.to_vec();
        for name in &names {
            let (name_keys, values) = keys_in_use(&names, name, keys);
            let (lookup_keys, lookup_values) =
                keys_in_use(std::slice::from_ref(&values), &values, &name_keys);
            let dest_index = first_item(&dest, &lookup_keys, &lookup_values);
            let origin_item = first_item(origin, &lookup_keys, &lookup_values).map(|i| &origin[i]);
            // kyaml merges into the object's item itself unless the patch replaces it, so
            // the merged item is also what the object's list holds from then on.
            let in_place = dest_index.filter(|_| {
                origin_item
                    .and_then(|i| i.get("$patch"))
                    .and_then(Value::as_str)
                    != Some("replace")
            });
            let item = self.value(dest_index.map(|i| dest[i].clone()), origin_item.cloned())?;
            used_keys = name_keys;
            let Some(mut item) = item.filter(|i| !is_empty_item(i)) else {
                set_item(&mut dest, None, &used_keys, &values);
                continue;
            };
            for (key, value) in used_keys.iter().zip(&values) {
                if let Some(map) = item.as_object_mut() {
                    if !map.contains_key(key) && !value.is_empty() {
                        map.insert(key.clone(), plain_scalar(value));
                    }
                }
            }
            if let Some(index) = in_place {
                dest[index] = item.clone();
            }
            set_item(&mut merged, Some(&item), &used_keys, &values);
        }
        for item in &dest {
            lay_over(&mut merged, item, &used_keys);
        }
        Ok(Value::Array(merged))
    }
}

/// Reads and removes a list's `$patch` directive: an item holding only `$patch`.
fn list_directive(items: &mut Vec<Value>) -> Result<Directive, MergeError> {
    let Some(item) = items
        .iter()
        .filter_map(Value::as_object)
        .find(|item| item.contains_key("$patch"))
    else {
        return Ok(Directive::Merge);
    };
    if item.len() > 1 {
        return Ok(Directive::Merge);
    }
    let word = item.get("$patch").map(text).unwrap_or_default();
    let directive = Directive::parse(&word)?;
    set_item(items, None, &["$patch".to_string()], &[word]);
    Ok(directive)
}

/// A value as kyaml compares it: a scalar's text; empty for null, maps and lists.
pub(super) fn text(value: &Value) -> String {
    match value {
        Value::String(_) if super::is_bare(value) => String::new(),
        Value::String(text) => text.clone(),
        Value::Number(number) => number.to_string(),
        Value::Bool(flag) => flag.to_string(),
        Value::Null | Value::Object(_) | Value::Array(_) => String::new(),
    }
}

/// Text written back as YAML would read it unquoted (`80` a number).
fn plain_scalar(text: &str) -> Value {
    serde_yaml_ng::from_str::<Value>(text)
        .ok()
        .filter(|v| !v.is_object() && !v.is_array() && !v.is_null())
        .unwrap_or_else(|| Value::String(text.to_string()))
}

fn is_empty_item(item: &Value) -> bool {
    item.is_null() || item.as_object().is_some_and(|m| m.is_empty())
}

/// Every item's name, the patch's items first, each name once: its keys' values, or, for
/// the empty key of a list of scalars, the item itself.
fn item_names(keys: &[String], origin: &[Value], dest: &[Value]) -> Vec<Vec<String>> {
    let mut names: Vec<Vec<String>> = Vec::new();
    for item in origin.iter().chain(dest) {
        let name: Vec<String> = (keys.iter())
            .map(|key| match key.is_empty() {
                true => text(item),
                false => item.get(key).map(text).unwrap_or_default(),
            })
            .collect();
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

/// Makes names that agree wherever both are set, and agree somewhere, one name.
fn unify_names(names: &mut [Vec<String>]) {
    for i in 0..names.len() {
        for j in 0..names.len() {
            if let Some(unified) = unified(&names[i], &names[j]) {
                names[i] = unified.clone();
                names[j] = unified;
            }
        }
    }
}

fn unified(a: &[String], b: &[String]) -> Option<Vec<String>> {
    if a.len() != b.len() {
        return None;
    }
    let mut common = false;
    let mut out = Vec::with_capacity(a.len());
    for (a, b) in a.iter().zip(b) {
        if a == b {
            common = true;
            out.push(a.clone());
        } else if !a.is_empty() && !b.is_empty() {
            return None;
        } else {
            out.push(if a.is_empty() { b.clone() } else { a.clone() });
        }
    }
    common.then_some(out)
}

/// The keys some name sets, with `name`'s values for them; all keys when none is set.
fn keys_in_use(
    names: &[Vec<String>],
    name: &[String],
    keys: &[String],
) -> (Vec<String>, Vec<String>) {
    let set: Vec<&String> = keys
        .iter()
        .enumerate()
        .filter(|(i, _)| {
            names
                .iter()
                .any(|n| n.get(*i).is_some_and(|v| !v.is_empty()))
        })
        .map(|(_, key)| key)
        .collect();
    if set.is_empty() {
        return (keys.to_vec(), name.to_vec());
    }
    let used_keys = keys.iter().filter(|k| set.contains(k)).cloned().collect();
    let values = name
        .iter()
        .zip(keys)
        .filter(|(value, key)| !value.is_empty() || set.contains(key))
        .map(|(value, _)| value.clone())
        .collect();
    (used_keys, values)
}

/// Where the first item whose keys have exactly these values is (in a list of scalars:
/// the first scalar of this text).
fn first_item(items: &[Value], keys: &[String], values: &[String]) -> Option<usize> {
    if keys.first().is_none_or(String::is_empty) {
        let wanted = values.first().map(String::as_str).unwrap_or_default();
        return items.iter().position(|item| text(item) == wanted);
    }
    items.iter().position(|item| {
        item.is_object()
            && keys
                .iter()
                .zip(values)
                .all(|(key, value)| item.get(key).is_some_and(|field| text(field) == *value))
    })
}

/// Whether an item has `key` set to `value` (any value when `value` is empty); for a key
/// that is empty, whether a scalar item reads `value`.
fn has_field(item: &Value, key: &str, value: &str) -> bool {
    if key.is_empty() {
        return !item.is_object() && !item.is_array() && text(item) == value;
    }
    match item.get(key) {
        Some(field) => value.is_empty() || text(field) == value,
        None => false,
    }
}

/// Replaces the items matching `values` on `keys` with `item` (removes them when `item` is
/// `None`), or appends `item` when none matches. Empty items go; with fewer values than
/// keys, an item the values cannot name goes too, as in kyaml.
fn set_item(list: &mut Vec<Value>, item: Option<&Value>, keys: &[String], values: &[String]) {
    let names_a_map = keys.first().is_some_and(|k| !k.is_empty())
        && values.first().is_some_and(|v| !v.is_empty());
    let mut found = false;
    let mut kept = Vec::with_capacity(list.len() + 1);
    for existing in std::mem::take(list) {
        if is_empty_item(&existing) {
            continue;
        }
        if !existing.is_object() && names_a_map {
            kept.push(existing);
            continue;
        }
        let mut matches = false;
        let mut all = true;
        for (j, key) in keys.iter().enumerate() {
            if let Some(value) = values.get(j) {
                matches = has_field(&existing, key, value);
            }
            if !matches {
                all = false;
                break;
            }
        }
        if !all {
            if !values.is_empty() {
                kept.push(existing);
            }
            continue;
        }
        found = true;
        kept.extend(item.cloned());
    }
    *list = kept;
    if let Some(item) = item.filter(|i| !i.is_null()) {
        if !found {
            list.push(item.clone());
        }
    }
}

/// Lays one of the object's items over the merged list, replacing the item of its name.
/// An item lacking a key is appended as it is, as kyaml appends it.
fn lay_over(merged: &mut Vec<Value>, item: &Value, keys: &[String]) {
    if keys.first().is_none_or(String::is_empty) {
        set_item(merged, Some(item), &[String::new()], &[text(item)]);
        return;
    }
    let mut values = Vec::with_capacity(keys.len());
    for key in keys {
        match item.get(key) {
            Some(value) => values.push(text(value)),
            None => merged.push(item.clone()),
        }
    }
    if keys.len() > 1 {
        set_item(merged, None, keys, &values);
    }
    set_item(merged, Some(item), keys, &values);
}
