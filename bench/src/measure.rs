//! What a process used: resident memory and CPU time, from /proc.

/// Resident memory of a process (`self` or a pid), in KiB, from /proc.
pub fn rss_kib(pid: &str) -> u64 {
    status_kib(pid, "VmRSS:")
}

/// The most resident memory a process (`self` or a pid) has had, in KiB, from /proc.
pub fn peak_rss_kib(pid: &str) -> u64 {
    status_kib(pid, "VmHWM:")
}

/// A KiB figure of /proc/PID/status.
fn status_kib(pid: &str, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// CPU time (user + system) of a process, from /proc; with `children`, that of its
/// children it waited for instead.
pub fn cpu_of(pid: &str, children: bool) -> f64 {
    let ticks_per_second = 100.0;
    let first = if children { 13 } else { 11 };
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let after_name = stat.rsplit_once(") ")?.1;
            let fields: Vec<&str> = after_name.split_whitespace().collect();
            let user: f64 = fields.get(first)?.parse().ok()?;
            let system: f64 = fields.get(first + 1)?.parse().ok()?;
            Some((user + system) / ticks_per_second)
        })
        .unwrap_or(0.0)
}

/// CPU time (user + system) of a process, from /proc.
pub fn cpu_seconds(pid: &str) -> f64 {
    cpu_of(pid, false)
}
