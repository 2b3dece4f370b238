//! The run's CPU figures (`cpu` in the JSON report, the `cpu:` line of the text
//! report): eqcheck's own CPU and its arms', checked against what this test
//! measures itself for the whole eqcheck process and everything it ran.

#[cfg(unix)]
use crate::util::{double, eqcheck, temp_dir};

/// eqcheck's own CPU and its arms' CPU, as this test sees the eqcheck process end:
/// `wait4` gives its own CPU plus that of every child it reaped.
#[cfg(unix)]
#[expect(
    clippy::zombie_processes,
    reason = "reaped by wait4, which std's wait cannot replace: it gives no rusage"
)]
fn cpu_of_whole_run(args: &[String]) -> (std::process::ExitStatus, f64) {
    use std::os::unix::process::ExitStatusExt;
    let child = std::process::Command::new(eqcheck())
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start eqcheck");
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `pid` is our own child, not yet reaped (std waits only when asked);
    // `status` and `usage` are valid and writable.
    let reaped = unsafe { libc::wait4(pid, &mut status, 0, usage.as_mut_ptr()) };
    assert_eq!(reaped, pid, "wait4 on eqcheck");
    // SAFETY: wait4 succeeded, so it filled the struct (it was zeroed anyway).
    let usage = unsafe { usage.assume_init() };
    let time = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    let cpu = time(usage.ru_utime) + time(usage.ru_stime);
    (std::process::ExitStatus::from_raw(status), cpu)
}

#[cfg(unix)]
#[test]
fn the_report_gives_eqcheck_s_own_cpu_and_the_arms_adding_up_to_the_whole_run() {
    let dir = temp_dir();
    let json = dir.path().join("report.json");
    // Each arm burns tens of milliseconds making 20 MiB of output, far more than
    // eqcheck spends comparing it.
    let arm = double("bytes 20M");
    let args: Vec<String> = [
        "--ref", &arm, "--cand", &arm, "--tree", "basic", "--sets", "depth", "--json",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([json.display().to_string()])
    .collect();
    let (status, whole) = cpu_of_whole_run(&args);
    let report = std::fs::read_to_string(&json).unwrap_or_default();
    let context = format!("eqcheck {args:?}: {status}; whole run {whole:.3} s CPU\n{report}");
    assert_eq!(status.code(), Some(0), "{context}");
    let report: serde_json::Value = serde_json::from_str(&report).expect("a JSON report");
    let figure = |name: &str| {
        report["cpu"][name]
            .as_f64()
            .unwrap_or_else(|| panic!("no cpu.{name}: {context}"))
    };
    let (own, arms) = (figure("harness_s"), figure("arms_s"));
    assert!(own > 0.0 && arms > 0.0, "{context}");
    assert!(arms > own, "the arms burn more than eqcheck: {context}");
    // The two figures split the whole; only the report's own writing, after the
    // matrix, is in neither.
    let gap = (whole - (own + arms)).abs();
    assert!(
        gap <= 0.05 + 0.1 * whole,
        "eqcheck {own:.3} s + arms {arms:.3} s is not the whole run's {whole:.3} s: {context}"
    );
}

#[cfg(unix)]
#[test]
fn the_text_report_says_what_eqcheck_cost_beside_its_arms() {
    let arm = double("bytes 4M");
    let out = crate::util::run([
        "--ref", &arm, "--cand", &arm, "--tree", "basic", "--sets", "depth",
    ]);
    crate::util::assert_exit(&out, 0);
    let text = String::from_utf8_lossy(&out.stdout);
    let line = (text.lines())
        .find(|l| l.starts_with("cpu: eqcheck "))
        .unwrap_or_else(|| panic!("no cpu line\n{out}"));
    assert!(
        line.contains(" s, arms ") && line.ends_with("% of the arms')"),
        "{line}\n{out}"
    );
}
