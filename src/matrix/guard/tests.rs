//! The guard of one tree, driven as the matrix drives it (an arm starts, the arm
//! is checked) on a small real tree: who is blamed, which arms a window names, what
//! later cases say, what the two ends find, and how many fingerprints it took.

use std::path::Path;

use super::*;

const ONE: &str = "t:g:one";
const TWO: &str = "t:g:two";

fn tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::fs::write(dir.path().join("sub/file"), b"x").unwrap();
    chmod(dir.path(), 0o644);
    dir
}

fn changed_by(verdict: Option<Verdict>) -> (Blame, Vec<String>) {
    match verdict {
        Some(Verdict::TreeChanged { arm, changes }) => (arm, changes),
        other => panic!("expected a changed tree, got {other:?}"),
    }
}

/// A change whose fingerprint names one path only (adding a file would move its
/// folder's mtime as well).
fn chmod(root: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::Permissions::from_mode(mode);
    std::fs::set_permissions(root.join("sub/file"), mode).unwrap();
}

/// One's reference arm leaves the tree alone, then its candidate changes a mode:
/// the candidate is blamed, with what moved.
fn candidate_of_one_changes_the_tree(guard: &Guard, root: &Path) -> Vec<String> {
    guard.arm_started(Blame::Reference, ONE);
    assert_eq!(guard.check(Blame::Reference, ONE), None);
    guard.arm_started(Blame::Candidate, ONE);
    chmod(root, 0o600);
    let (arm, changes) = changed_by(guard.check(Blame::Candidate, ONE));
    assert_eq!(arm, Blame::Candidate);
    changes
}

#[test]
fn without_a_watch_every_arm_is_fingerprinted_and_the_first_to_change_the_tree_is_named() {
    let dir = tree();
    let baseline = fingerprint::take(dir.path(), fingerprint::Depth::Metadata);
    let guard = Guard::new(
        dir.path(),
        fingerprint::Depth::Metadata,
        &baseline,
        Err("no watch here".into()),
    );
    let changes = candidate_of_one_changes_the_tree(&guard, dir.path());
    assert_eq!(changes, ["sub/file: mode 644 -> 600"]);
    guard.arm_started(Blame::Reference, TWO);
    let (arm, changes) = changed_by(guard.check(Blame::Reference, TWO));
    assert_eq!(arm, Blame::Earlier);
    assert_eq!(
        changes,
        [
            "(the tree was already changed: first seen after the candidate arm of t:g:one)",
            "sub/file: mode 644 -> 600"
        ]
    );
    assert_eq!(
        guard.finish(),
        None,
        "an unwatched tree was checked after every arm"
    );
    // The baseline, one per arm, and one more to name what moved per changed arm.
    assert_eq!(
        guard.report(),
        (
            "fingerprinted after every arm: no watch here".to_string(),
            6
        )
    );
}

#[cfg(target_os = "linux")]
fn watched<'a>(root: &'a Path, baseline: &'a Fingerprint) -> Guard<'a> {
    let watch = crate::matrix::watch::start(root);
    assert!(watch.is_ok(), "cannot watch the tree: {:?}", watch.err());
    Guard::new(root, fingerprint::Depth::Metadata, baseline, watch)
}

#[cfg(target_os = "linux")]
#[test]
fn with_one_arm_at_a_time_the_watch_blames_that_arm_alone_and_fingerprints_only_to_name_the_change()
{
    let dir = tree();
    let baseline = fingerprint::take(dir.path(), fingerprint::Depth::Metadata);
    let guard = watched(dir.path(), &baseline);
    let changes = candidate_of_one_changes_the_tree(&guard, dir.path());
    assert_eq!(
        changes,
        ["sub/file: mode 644 -> 600"],
        "no window of other arms to name"
    );
    guard.arm_started(Blame::Reference, TWO);
    let (arm, changes) = changed_by(guard.check(Blame::Reference, TWO));
    assert_eq!(arm, Blame::Earlier);
    assert_eq!(
        changes,
        ["(the tree was already changed: first seen after the candidate arm of t:g:one)"]
    );
    assert_eq!(guard.finish(), None, "the change was already reported");
    assert_eq!(
        guard.report(),
        (
            "watched (inotify on 2 folders), fingerprinted at the start and the end".to_string(),
            2
        )
    );
}

#[cfg(target_os = "linux")]
#[test]
fn with_arms_running_together_a_change_names_every_arm_of_its_window() {
    const THREE: &str = "t:g:three";
    let dir = tree();
    let baseline = fingerprint::take(dir.path(), fingerprint::Depth::Metadata);
    let guard = watched(dir.path(), &baseline);
    guard.arm_started(Blame::Reference, ONE);
    guard.arm_started(Blame::Candidate, TWO);
    assert_eq!(guard.check(Blame::Reference, ONE), None);
    // The candidate of two is still running, so it stays in the next window.
    guard.arm_started(Blame::Reference, THREE);
    chmod(dir.path(), 0o600);
    let (arm, changes) = changed_by(guard.check(Blame::Candidate, TWO));
    assert_eq!(arm, Blame::Candidate, "the first arm to see it is named");
    assert_eq!(
        changes,
        [
            "sub/file: mode 644 -> 600",
            "(arms running while it changed: the candidate arm of t:g:two, the reference arm of t:g:three)"
        ]
    );
}

#[cfg(target_os = "linux")]
#[test]
fn a_change_after_the_last_arm_is_found_at_the_end_of_a_watched_tree() {
    let dir = tree();
    let baseline = fingerprint::take(dir.path(), fingerprint::Depth::Metadata);
    let guard = watched(dir.path(), &baseline);
    guard.arm_started(Blame::Reference, ONE);
    assert_eq!(guard.check(Blame::Reference, ONE), None);
    assert_eq!(guard.finish(), None);
    chmod(dir.path(), 0o640);
    assert_eq!(
        guard.finish(),
        Some(vec!["sub/file: mode 644 -> 640".to_string()])
    );
}

/// A file with a link outside the tree can be written through that link, which
/// no folder of the tree hears of: its own watch does, as the arm writes.
#[cfg(target_os = "linux")]
#[test]
fn a_write_through_a_link_outside_the_tree_is_blamed_on_the_arm_that_made_it() {
    let outside = tempfile::tempdir().unwrap();
    let dir = tree();
    let link = outside.path().join("link");
    std::fs::hard_link(dir.path().join("sub/file"), &link).unwrap();
    let depth = fingerprint::Depth::Metadata;
    let (baseline, watch) = crate::matrix::fingerprint_and_watch(dir.path(), Some(depth));
    let guard = Guard::new(dir.path(), depth, &baseline, watch.expect("a watch"));
    guard.arm_started(Blame::Reference, ONE);
    assert_eq!(guard.check(Blame::Reference, ONE), None);
    guard.arm_started(Blame::Candidate, ONE);
    std::fs::write(&link, b"written elsewhere").unwrap();
    let (arm, changes) = changed_by(guard.check(Blame::Candidate, ONE));
    assert_eq!(arm, Blame::Candidate, "{changes:?}");
    assert!(
        guard
            .report()
            .0
            .contains("on 2 folders and 1 file with other links"),
        "{:?}",
        guard.report()
    );
}
