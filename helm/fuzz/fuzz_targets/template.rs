//! Any text is parsed as a Go template and, when it parses, executed with a small set of
//! values and every function charts can call: errors are fine, panics are not.
#![no_main]

use fleet_helm::template::{Exec, Templates, Value};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(source) = std::str::from_utf8(data) else {
        return;
    };
    let mut templates = Templates::default();
    if templates.add("fuzz", source).is_err() {
        return;
    }
    let values = serde_json::json!({
        "Values": {"name": "web", "n": 3, "list": [1, "a", {"k": "v"}], "map": {"a": {"b": 2}}},
        "Release": {"Name": "r", "Namespace": "ns"},
    });
    let funcs = fleet_helm::functions();
    let mut exec = Exec::new(&templates, &funcs);
    let _ = exec.execute("fuzz", &Value::from_json_floats(&values));
});
