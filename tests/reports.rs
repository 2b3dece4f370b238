//! The reports end to end: the Markdown report's table and folded diffs (with a
//! fence no diff line can close), the JUnit XML read back with an independent XML
//! parser, GitHub annotations and the step summary, colour on request and never
//! under `NO_COLOR`, the rules on where reports may go, and that an earlier report
//! file is only ever replaced by a complete one.

use std::path::Path;

use quick_xml::events::Event;

use crate::util::{assert_exit, double, eqcheck, json_report, temp_dir, Cmd};

fn walk(engine: &str) -> String {
    format!("{} walk --engine {engine}", eqcheck().display())
}

/// Writes a flag-set file into `dir` and returns its path.
fn sets_file(dir: &Path, text: &str) -> String {
    let file = dir.join("these.sets");
    std::fs::write(&file, text).expect("the flag-set file is written");
    file.to_string_lossy().into_owned()
}

/// eqcheck over the small tree with these arms and flag-set file, and no GitHub
/// environment unless a test sets one (the suite itself may run in GitHub Actions).
fn eqcheck_run(reference: &str, candidate: &str, sets: &str, rest: &[&str]) -> Cmd {
    Cmd::new(eqcheck())
        .args(["--ref", reference, "--cand", candidate])
        .args(["--tree", "basic", "--sets", sets])
        .args(rest)
        .env("GITHUB_ACTIONS", "")
        .env("GITHUB_STEP_SUMMARY", "")
}

/// Arms that print `a`, a line of three backticks and `c` against `b` and the
/// backticks: a diff with a context line that would close a three-backtick fence.
fn backtick_arms() -> (String, String) {
    (
        double("print 'a\\n```\\nc\\n'"),
        double("print 'b\\n```\\n'"),
    )
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The lines inside the first fenced block whose opening line ends in `info`, read
/// as CommonMark reads them: the block closes at the first line that is, after at
/// most three spaces, a run of at least as many backticks and nothing else.
fn fenced_block(markdown: &str, info: &str) -> Vec<String> {
    let mut lines = markdown.lines();
    let fence = lines
        .by_ref()
        .find_map(|line| {
            let ticks = line.len() - line.trim_start_matches('`').len();
            (ticks >= 3 && &line[ticks..] == info).then_some(ticks)
        })
        .unwrap_or_else(|| panic!("no ```{info} block in:\n{markdown}"));
    lines
        .take_while(|line| {
            let indent = line.len() - line.trim_start_matches(' ').len();
            let ticks = line.trim_start_matches(' ').trim_end();
            let closes = indent <= 3 && ticks.len() >= fence && ticks.chars().all(|c| c == '`');
            !closes
        })
        .map(str::to_string)
        .collect()
}

#[test]
fn the_markdown_report_has_the_table_and_each_difference_folded_with_its_diff() {
    let dir = temp_dir();
    let sets = sets_file(dir.path(), "[only]\n(none)\n");
    let report = dir.path().join("report.md");
    let (reference, candidate) = backtick_arms();
    let out = eqcheck_run(
        &reference,
        &candidate,
        &sets,
        &["--markdown", &report.to_string_lossy()],
    )
    .output();
    assert_exit(&out, 1);
    let markdown = std::fs::read_to_string(&report).expect("the Markdown report exists");
    let has = |needle: &str| {
        assert!(
            markdown.contains(needle),
            "no {needle:?} in:\n{markdown}\n{out}"
        )
    };
    has("## eqcheck: DIFFERENCES FOUND");
    has("| Tree | Sets | Identical | Order-only | Normalized | Differs | Flaky | Errors |");
    has("| basic | 1 | 0 | 0 | 0 | 1 | 0 | 0 |");
    has("<details>\n<summary><b>basic [only] (none)</b>: differs</summary>");
    has("</details>");
    has("eqcheck-double print 'b\\n```\\n'");
    // The line of backticks in the diff stays inside the fence: the removed `c`
    // after it is still part of the diff.
    let diff = fenced_block(&markdown, "diff");
    for line in ["-a", "+b", " ```", "-c"] {
        assert!(diff.iter().any(|l| l == line), "{line:?} not in {diff:?}");
    }
    // The text report stays on stdout when the Markdown goes to a file.
    assert!(text(&out.stdout).contains("| basic |"), "{out}");
}

#[test]
fn markdown_on_stdout_moves_the_text_report_to_stderr() {
    let dir = temp_dir();
    let sets = sets_file(dir.path(), "[only]\n(none)\n");
    let (reference, candidate) = backtick_arms();
    let out = eqcheck_run(&reference, &candidate, &sets, &["--markdown", "-"]).output();
    assert_exit(&out, 1);
    assert!(text(&out.stdout).starts_with("## eqcheck: "), "{out}");
    assert!(!text(&out.stdout).contains("== basic"), "{out}");
    assert!(
        text(&out.stderr).contains("== basic [only] (none): differs"),
        "{out}"
    );
}

/// An element of an XML document: its name, attributes, children and text.
#[derive(Debug, Default)]
struct Element {
    name: String,
    attributes: Vec<(String, String)>,
    children: Vec<Element>,
    text: String,
}

impl Element {
    fn attribute(&self, name: &str) -> &str {
        self.attributes
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .unwrap_or_else(|| panic!("<{}> has no {name}: {self:?}", self.name))
    }

    fn all(&self, name: &str) -> Vec<&Element> {
        self.children.iter().filter(|c| c.name == name).collect()
    }

    fn count(&self, name: &str) -> usize {
        self.all(name).len()
    }
}

/// Parses a whole XML document into its root element with quick-xml's reader, not
/// with the library that wrote it.
fn parse_xml(xml: &str) -> Element {
    let mut reader = quick_xml::Reader::from_str(xml);
    let mut open: Vec<Element> = vec![Element::default()];
    let start = |e: &quick_xml::events::BytesStart| Element {
        name: String::from_utf8_lossy(e.name().as_ref()).into_owned(),
        attributes: e
            .attributes()
            .map(|a| {
                let a = a.expect("a well-formed attribute");
                let value = a
                    .normalized_value(quick_xml::XmlVersion::Explicit1_0)
                    .expect("an attribute value");
                (
                    String::from_utf8_lossy(a.key.as_ref()).into_owned(),
                    value.into_owned(),
                )
            })
            .collect(),
        ..Element::default()
    };
    loop {
        match reader.read_event().expect("well-formed XML") {
            Event::Start(e) => open.push(start(&e)),
            Event::Empty(e) => {
                let element = start(&e);
                open.last_mut().expect("a parent").children.push(element);
            }
            Event::End(_) => {
                let done = open.pop().expect("an open element");
                open.last_mut().expect("a parent").children.push(done);
            }
            Event::Text(t) => {
                let decoded = t.decode().expect("UTF-8 text");
                open.last_mut().expect("an element").text.push_str(&decoded);
            }
            Event::Eof => break,
            _ => {}
        }
    }
    let mut document = open.pop().expect("the document");
    assert!(open.is_empty(), "unclosed elements");
    assert_eq!(document.children.len(), 1, "one root element");
    document.children.pop().expect("the root")
}

#[test]
fn the_junit_report_has_a_suite_per_group_a_case_per_set_and_fails_differences() {
    let dir = temp_dir();
    // Line 20 exists only when every entry is listed (`-a`): the one-line sets are
    // identical, the `-a` set differs.
    let sets = sets_file(dir.path(), "[small]\n-s\n-d 0\n[big]\n-a\n");
    let report = dir.path().join("junit.xml");
    let candidate = double("walk-alter-line 20 --engine fast");
    let out = eqcheck_run(
        &walk("reference"),
        &candidate,
        &sets,
        &["--junit", &report.to_string_lossy()],
    )
    .output();
    assert_exit(&out, 1);
    let xml = std::fs::read_to_string(&report).expect("the JUnit report exists");
    let root = parse_xml(&xml);
    let context = format!("{xml}\n{out}");
    assert_eq!(root.name, "testsuites", "{context}");
    assert_eq!(
        (root.attribute("tests"), root.attribute("failures")),
        ("3", "1"),
        "{context}"
    );
    assert_eq!(root.attribute("errors"), "0", "{context}");
    let suites = root.all("testsuite");
    let names: Vec<&str> = suites.iter().map(|s| s.attribute("name")).collect();
    assert_eq!(names, ["small", "big"], "{context}");
    let (small, big) = (suites[0], suites[1]);
    assert_eq!(small.count("testcase"), 2, "{context}");
    assert_eq!(small.attribute("failures"), "0", "{context}");
    assert_eq!(big.attribute("failures"), "1", "{context}");
    let cases: Vec<&str> = small
        .all("testcase")
        .iter()
        .map(|c| c.attribute("name"))
        .collect();
    assert_eq!(cases, ["basic: -s", "basic: -d 0"], "{context}");
    for case in small.all("testcase") {
        assert_eq!(case.attribute("classname"), "small", "{context}");
        assert_eq!(case.count("failure"), 0, "{context}");
        let system_out = &case.all("system-out")[0].text;
        assert!(system_out.contains("verdict: identical"), "{context}");
    }
    let failing = big.all("testcase")[0];
    assert_eq!(failing.attribute("name"), "basic: -a", "{context}");
    let failure = failing.all("failure")[0];
    assert_eq!(failure.attribute("message"), "differs: stdout", "{context}");
    assert!(failure.text.contains("+++ candidate"), "{context}");
    let time: f64 = failing.attribute("time").parse().expect("a time");
    assert!(time > 0.0, "the arms' time is the case's: {context}");
}

#[test]
fn a_flaky_arm_is_a_failure_marked_flaky_in_junit() {
    let dir = temp_dir();
    let sets = sets_file(dir.path(), "[only]\n(none)\n");
    // Thirty items in a new order on every run: three runs cannot all agree.
    let shuffler = double("items 30 , list:");
    let out = eqcheck_run(
        &shuffler,
        &double("print 'list:\\n'"),
        &sets,
        &["--runs", "3", "--junit", "-"],
    )
    .output();
    assert_exit(&out, 1);
    let xml = text(&out.stdout);
    let root = parse_xml(&xml);
    let context = format!("{xml}\n{out}");
    assert_eq!(root.attribute("failures"), "1", "{context}");
    let case = root.all("testsuite")[0].all("testcase")[0];
    let failure = case.all("failure")[0];
    assert!(
        failure.attribute("message").starts_with("flaky: "),
        "{context}"
    );
    assert!(case.count("flakyFailure") >= 1, "{context}");
    assert_eq!(case.count("rerunFailure"), 0, "{context}");
    // The text report moved to stderr.
    assert!(text(&out.stderr).contains(": flaky"), "{context}");
}

#[test]
fn two_reports_on_stdout_or_an_unwritable_path_stop_the_run_before_it_starts() {
    let dir = temp_dir();
    let sets = sets_file(dir.path(), "[only]\n(none)\n");
    let witness = dir.path().join("ran");
    // An arm that counts its runs in a file, so it leaves the file behind if it
    // ever runs (as root it runs as root, to be able to write there).
    let counter = double(&format!("drop-every 1 {}", witness.display()));
    let stopped = |rest: &[&str], message: &str| {
        let rest = [rest, crate::util::as_root()].concat();
        let out = eqcheck_run(&counter, &counter, &sets, &rest).output();
        assert_exit(&out, 2);
        assert!(text(&out.stderr).contains(message), "{out}");
        assert!(out.stdout.is_empty(), "{out}");
        assert!(!witness.exists(), "an arm ran\n{out}");
    };
    stopped(
        &["--json", "-", "--markdown", "-"],
        "--json - and --markdown - both ask for stdout: send one of them to a file",
    );
    stopped(
        &["--junit", "-", "--markdown", "-"],
        "--markdown - and --junit - both ask for stdout",
    );
    let unwritable = "/nonexistent-folder/report.xml";
    stopped(&["--junit", unwritable], &format!("--junit {unwritable}: "));
    let shared = dir.path().join("a.json");
    let shared = shared.to_string_lossy();
    stopped(
        &["--json", &shared, "--junit", &shared],
        "--json and --junit both name",
    );
    // A link to a report's file is that file: one report would be lost.
    let link = dir.path().join("link.md");
    #[cfg(unix)]
    std::os::unix::fs::symlink(dir.path().join("a.json"), &link).unwrap();
    #[cfg(unix)]
    stopped(
        &["--json", &shared, "--markdown", &link.to_string_lossy()],
        "--json and --markdown both name",
    );
    // A link another user planted in a world-writable sticky folder is not
    // followed: it would overwrite what they chose.
    #[cfg(unix)]
    if crate::util::is_root() {
        use std::os::unix::fs::PermissionsExt;
        let sticky = dir.path().join("tmp");
        std::fs::create_dir(&sticky).unwrap();
        std::fs::set_permissions(&sticky, std::fs::Permissions::from_mode(0o1777)).unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let planted = sticky.join("r.json");
        std::os::unix::fs::symlink(&victim, &planted).unwrap();
        std::os::unix::fs::lchown(&planted, Some(65534), Some(65534)).unwrap();
        stopped(
            &["--json", &planted.to_string_lossy()],
            "a symlink owned by uid 65534 in the world-writable sticky folder",
        );
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    }
    // The witness works: a run that starts leaves it.
    let out = eqcheck_run(&counter, &counter, &sets, crate::util::as_root()).output();
    assert_exit(&out, 0);
    assert!(witness.exists(), "the arm left no count\n{out}");
}

#[cfg(unix)]
#[test]
fn a_report_inside_a_tree_the_arms_read_is_refused_before_the_run() {
    // The report's staging folder would be made in the tree before the arms list
    // it, and the report would be in the tree the next run reads.
    let dir = temp_dir();
    let tree = dir.path().join("web");
    std::fs::create_dir(&tree).unwrap();
    std::fs::write(tree.join("page.html"), "<p>hi</p>\n").unwrap();
    let tree_arg = tree.to_string_lossy().into_owned();
    let sets = sets_file(dir.path(), "[only]\n(none)\n");
    let witness = dir.path().join("ran");
    let counter = double(&format!("drop-every 1 {}", witness.display()));
    let inside = tree.join("r.json");
    // A link outside the tree that leads into it is the file it leads to.
    let link = dir.path().join("link.md");
    std::os::unix::fs::symlink(tree.join("r.md"), &link).unwrap();
    let run = |rest: &[&str]| {
        Cmd::new(eqcheck())
            .args(["--ref", &counter, "--cand", &counter, "--tree", &tree_arg])
            .args(["--sets", &sets])
            .args(rest)
            .args(crate::util::as_root())
            .output()
    };
    let canonical = tree.canonicalize().unwrap();
    for (flag, path) in [("--json", &inside), ("--markdown", &link)] {
        let path = path.to_string_lossy();
        let out = run(&[flag, &path]);
        assert_exit(&out, 2);
        let message = format!("{flag} {path}: inside the tree {}", canonical.display());
        assert!(text(&out.stderr).contains(&message), "{message:?}\n{out}");
        assert!(!witness.exists(), "an arm ran\n{out}");
        assert_eq!(names_in(&tree), ["page.html"], "{out}");
    }
    let inside = inside.to_string_lossy();
    let out = Cmd::new(eqcheck())
        .args(["probe", "--tree", &tree_arg, "--json", &inside])
        .output();
    assert_exit(&out, 2);
    assert!(text(&out.stderr).contains("inside the tree"), "{out}");
    assert_eq!(names_in(&tree), ["page.html"], "{out}");
    // Beside the tree is fine, and the arms ran.
    let beside = dir.path().join("r.json");
    let out = run(&["--json", &beside.to_string_lossy()]);
    assert_exit(&out, 0);
    assert!(witness.exists() && beside.exists(), "{out}");
    assert_eq!(names_in(&tree), ["page.html"], "{out}");
}

#[test]
fn in_github_actions_differences_are_annotated_and_the_summary_is_appended() {
    let dir = temp_dir();
    let sets = sets_file(dir.path(), "[only]\n(none)\n");
    let summary = dir.path().join("step-summary.md");
    std::fs::write(&summary, "an earlier step's summary\n").unwrap();
    // A percent sign and line breaks, which a workflow command must escape.
    let reference = double("print 'a 100%\\n'");
    let candidate = double("print 'b\\n'");
    let github = |rest: &[&str]| {
        eqcheck_run(&reference, &candidate, &sets, rest)
            .env("GITHUB_ACTIONS", "true")
            .env("GITHUB_STEP_SUMMARY", &summary)
            .output()
    };
    let out = github(&[]);
    assert_exit(&out, 1);
    let stdout = text(&out.stdout);
    let errors: Vec<&str> = stdout.lines().filter(|l| l.starts_with("::")).collect();
    assert_eq!(errors.len(), 1, "{out}");
    let error = errors[0];
    assert!(
        error.starts_with("::error title=eqcheck%3A basic [only] (none)%3A differs::differs%0A"),
        "{error}\n{out}"
    );
    assert!(error.contains("%0A-a 100%25%0A+b"), "{error}\n{out}");
    let appended = std::fs::read_to_string(&summary).unwrap();
    assert!(
        appended.starts_with("an earlier step's summary\n"),
        "{appended}"
    );
    assert!(
        appended.contains("## eqcheck: DIFFERENCES FOUND"),
        "{appended}"
    );
    assert!(appended.contains("<details>"), "{appended}");
    // With a report on stdout, the annotations go to stderr beside the text report.
    let out = github(&["--json", "-"]);
    assert_exit(&out, 1);
    json_report(&out);
    assert!(text(&out.stderr).contains("\n::error title="), "{out}");
}

#[test]
fn colour_is_forced_by_always_and_never_given_to_a_pipe_or_under_no_color() {
    let dir = temp_dir();
    let sets = sets_file(dir.path(), "[only]\n(none)\n");
    let (reference, candidate) = backtick_arms();
    let run = |color: Option<&str>, no_color: &str| {
        let rest: Vec<&str> = color.map_or(Vec::new(), |c| vec!["--color", c]);
        eqcheck_run(&reference, &candidate, &sets, &rest)
            .env("NO_COLOR", no_color)
            .output()
    };
    let forced = run(Some("always"), "1");
    assert_exit(&forced, 1);
    let painted = text(&forced.stdout);
    assert!(painted.contains("\x1b[31m-a\x1b[0m"), "{forced}");
    assert!(painted.contains("\x1b[32m+b\x1b[0m"), "{forced}");
    assert!(painted.contains("\x1b[36m@@ "), "{forced}");
    assert!(painted.contains(": \x1b[31mdiffers\x1b[0m"), "{forced}");
    for out in [run(None, "1"), run(None, ""), run(Some("never"), "")] {
        assert_exit(&out, 1);
        assert!(!out.stdout.contains(&0x1b), "{out}");
        // Nor a progress bar: stderr is not a terminal.
        assert!(out.stderr.is_empty(), "{out}");
    }
}

/// The report paths of [`earlier_reports`], as the command line gives them.
fn report_args(dir: &Path) -> Vec<String> {
    let mut args = Vec::new();
    for (flag, name) in [
        ("--json", "report.json"),
        ("--markdown", "report.md"),
        ("--junit", "report.xml"),
    ] {
        args.push(flag.to_string());
        args.push(dir.join(name).to_string_lossy().into_owned());
    }
    args
}

/// Leaves a report of each format in `dir`, as a previous run would have.
fn earlier_reports(dir: &Path) {
    for name in ["report.json", "report.md", "report.xml"] {
        std::fs::write(dir.join(name), "the earlier report\n").unwrap();
    }
}

/// The names in `dir`, sorted: anything a run left behind shows here.
fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn assert_earlier_reports_kept(dir: &Path, context: &dyn std::fmt::Display) {
    for name in ["report.json", "report.md", "report.xml"] {
        let kept = std::fs::read_to_string(dir.join(name)).unwrap_or_default();
        assert_eq!(kept, "the earlier report\n", "{name}\n{context}");
    }
}

#[test]
fn a_run_that_fails_keeps_the_earlier_reports_and_a_complete_one_replaces_them() {
    let dir = temp_dir();
    let sets = sets_file(dir.path(), "[only]\n(none)\n");
    // A temp folder that is not there: no scratch folder can be made, a harness
    // failure after the reports were opened.
    let missing = dir.path().join("no-such-temp");
    earlier_reports(dir.path());
    let before = names_in(dir.path());
    let arm = double("print 'same\\n'");
    let reports = report_args(dir.path());
    let failed = eqcheck_run(&arm, &arm, &sets, &[])
        .args(&reports)
        .env("TMPDIR", &missing)
        .output();
    assert_exit(&failed, 3);
    assert!(
        text(&failed.stderr).contains("cannot make the run's scratch folder"),
        "{failed}"
    );
    assert_earlier_reports_kept(dir.path(), &failed);
    assert_eq!(names_in(dir.path()), before, "left behind\n{failed}");

    let out = eqcheck_run(&arm, &arm, &sets, &[]).args(&reports).output();
    assert_exit(&out, 0);
    let json = std::fs::read(dir.path().join("report.json")).unwrap();
    serde_json::from_slice::<serde_json::Value>(&json).expect("the JSON report replaced");
    let markdown = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    assert!(markdown.starts_with("## eqcheck: "), "{markdown}\n{out}");
    let junit = std::fs::read_to_string(dir.path().join("report.xml")).unwrap();
    assert_eq!(parse_xml(&junit).name, "testsuites", "{junit}\n{out}");
    assert_eq!(names_in(dir.path()), before, "left behind\n{out}");
}

#[cfg(unix)]
#[test]
fn an_interrupted_run_keeps_the_earlier_reports() {
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    let dir = temp_dir();
    let sets = sets_file(dir.path(), "[only]\n(none)\n");
    earlier_reports(dir.path());
    let before = names_in(dir.path());
    // Outside the folder the reports go to, so that only they are watched there.
    let started = temp_dir();
    let witness = started.path().join("started");
    let arm = format!(
        "sh -c {}",
        shell_words::quote(&format!("echo > '{}'; exec sleep 60", witness.display()))
    );
    let arms = ["--ref", &arm, "--cand", &arm];
    let mut child = Command::new(eqcheck())
        .args(arms)
        .args(["--sets", &sets, "--tree", "basic"])
        .args(report_args(dir.path()))
        .args(crate::util::is_root().then_some("--as-root"))
        .env("GITHUB_ACTIONS", "")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("eqcheck starts");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !witness.exists() {
        if let Some(status) = child.try_wait().expect("eqcheck is waited for") {
            panic!("eqcheck ended before an arm started: {status:?}");
        }
        assert!(Instant::now() < deadline, "no arm started");
        std::thread::sleep(Duration::from_millis(10));
    }
    let pid = rustix::process::Pid::from_child(&child);
    rustix::process::kill_process(pid, rustix::process::Signal::INT).expect("SIGINT is sent");
    let out = child.wait_with_output().expect("eqcheck ends");
    let context = format!("{:?}\n{}", out.status, text(&out.stderr));
    assert_eq!(out.status.code(), Some(130), "{context}");
    assert_earlier_reports_kept(dir.path(), &context);
    assert_eq!(names_in(dir.path()), before, "left behind\n{context}");
}
