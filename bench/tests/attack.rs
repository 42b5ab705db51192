//! The attack probe suite runs in the test suite too: every probe must hold against the
//! real binaries (`fleet hub`, `fleet gitjob`, `fleet controller` as processes).

#[test]
fn every_attack_probe_holds() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_fleet-bench"))
        .arg("attack")
        .output()
        .expect("fleet-bench runs");
    let printed = String::from_utf8_lossy(&output.stdout);
    println!("{printed}");
    let last = printed.lines().last().unwrap_or_default();
    assert!(
        output.status.success(),
        "{printed}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let (held, all) = last
        .strip_prefix("fleet bench attack: ")
        .and_then(|rest| rest.split_once(" probes held"))
        .and_then(|(counts, _)| counts.split_once(" of "))
        .expect("the summary line");
    assert_eq!(held, all, "{last}");
    assert!(all.parse::<usize>().is_ok_and(|n| n >= 13), "{last}");
}
