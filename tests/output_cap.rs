//! `--max-output`: an arm that writes more than the cap to a stream is stopped
//! there, and its case (or bench run) is an error that names the stream and the
//! cap in every report; a cap that is no size, 0, or past 1 TiB is a usage error
//! naming the flag or the eqcheck.toml line.

use crate::bench::{bench, row};
use crate::util::{assert_exit, double, json_report, lossy, run, temp_dir};
use crate::verdicts::{one_set_file, only_case, run_sets};

#[test]
fn an_arm_past_the_cap_is_stopped_and_its_case_is_an_error_that_says_so() {
    let dir = temp_dir();
    let sets = one_set_file(dir.path(), "");
    let junit = dir.path().join("r.xml");
    let markdown = dir.path().join("r.md");
    let flooding = double("bytes 64M");
    let (junit_path, markdown_path) = (junit.display().to_string(), markdown.display().to_string());
    let rest = [
        "--max-output",
        "1M",
        "--junit",
        &junit_path,
        "--markdown",
        &markdown_path,
    ];
    let out = run_sets(&flooding, &flooding, &sets, &rest);
    assert_exit(&out, 3);
    let said = "stdout passed the 1 MiB cap (--max-output); the arm was killed";
    let case = only_case(&json_report(&out), &out);
    assert_eq!(case["verdict"]["kind"], "error", "{out}");
    let reason = case["verdict"]["reason"].as_str().unwrap_or_default();
    assert_eq!(reason, format!("reference arm {said}"), "{out}");
    let status = &case["reference"]["status"];
    assert_eq!(status["kind"], "output-capped", "{out}");
    assert_eq!(status["stream"], "stdout", "{out}");
    assert_eq!(status["cap_bytes"], 1 << 20, "{out}");
    assert!(lossy(&out.stderr).contains(said), "{out}");
    for report in [&junit, &markdown] {
        let text = std::fs::read_to_string(report).unwrap();
        assert!(text.contains(said), "{}:\n{text}", report.display());
    }
}

/// The file size limit stops the process that writes past the cap; the rest of
/// the arm (here, a shell that would go on sleeping) is killed with it.
#[cfg(unix)]
#[test]
fn the_whole_arm_is_killed_when_one_of_its_processes_passes_the_cap() {
    let dir = temp_dir();
    let sets = one_set_file(dir.path(), "");
    let arm = "sh -c 'head -c 2097152 /dev/zero; sleep 40'";
    let out = run_sets(arm, arm, &sets, &["--max-output", "1M", "--timeout", "300"]);
    assert_exit(&out, 3);
    let case = only_case(&json_report(&out), &out);
    assert_eq!(
        case["reference"]["status"]["kind"], "output-capped",
        "{out}"
    );
    // Far less than the sleep, however slow the machine.
    let took = case["reference"]["duration_ms"]
        .as_f64()
        .unwrap_or(f64::MAX);
    assert!(took < 20_000.0, "the arm ran on for {took} ms\n{out}");
}

#[test]
fn a_bench_run_past_the_cap_is_counted_as_failed_and_kept_out() {
    let out = bench(
        &double("print same"),
        &double("bytes 64M"),
        &["--rounds", "1", "--warmup", "0", "--max-output", "1M"],
    );
    assert_exit(&out, 3);
    let report = json_report(&out);
    let row = row(&report);
    assert_eq!(row["runs"][1]["status"]["kind"], "output-capped", "{out}");
}

#[test]
fn a_cap_that_is_no_size_is_a_usage_error_at_its_place() {
    for (value, expected) in [
        ("0", "--max-output: must be more than 0 bytes"),
        ("2000G", "--max-output: size `2000G`: at most 1024G"),
        (
            "2T",
            "--max-output: bad size `2T` (bytes, or a number with K, M or G)",
        ),
        (
            "abc",
            "--max-output: bad size `abc` (bytes, or a number with K, M or G)",
        ),
    ] {
        let out = run(["--tree", "basic", "--max-output", value]);
        assert_exit(&out, 2);
        assert!(lossy(&out.stderr).contains(expected), "{out}");
    }
    let dir = temp_dir();
    for (line, expected) in [
        (
            "max_output = \"2T\"",
            "eqcheck.toml:1:14: max_output: bad size `2T`",
        ),
        (
            "max_output = 0",
            "eqcheck.toml:1:14: max_output: must be more than 0 bytes",
        ),
        (
            "max_output = true",
            "eqcheck.toml:1:14: max_output: expected a size",
        ),
    ] {
        std::fs::write(dir.path().join("eqcheck.toml"), format!("{line}\n")).unwrap();
        let out = crate::util::Cmd::new(crate::util::eqcheck())
            .args(["--tree", "basic"])
            .cwd(dir.path())
            .output();
        assert_exit(&out, 2);
        assert!(lossy(&out.stderr).contains(expected), "{out}");
    }
}
