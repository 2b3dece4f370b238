//! Tests of flag-set files: parsing, errors naming their line, and the built-in files.

use super::*;

fn error_of(text: &str) -> String {
    parse("x.sets", text).unwrap_err().to_string()
}

#[test]
fn malformed_files_name_the_line() {
    assert_eq!(
        error_of("description = d\n-a\n"),
        "x.sets:2: expected `key = value` or a `[group]` header, found `-a`"
    );
    assert_eq!(
        error_of("[g]\n-a 'open\n"),
        "x.sets:2: cannot split set: missing closing quote"
    );
    assert_eq!(
        error_of("[g]\n-a\n[g]\n-b\n"),
        "x.sets:3: group `g` is defined twice"
    );
    assert_eq!(
        error_of("[g]\n-a\n-a\n"),
        "x.sets:3: set `-a` repeats line 2"
    );
    assert_eq!(
        error_of("[g]\n[h]\n-a\n"),
        "x.sets:2: group `g` has no sets"
    );
    assert_eq!(
        error_of("colour = red\n[g]\n-a\n"),
        "x.sets:1: unknown key `colour` (description, common, operand, argv0, shrink-common, env.NAME)"
    );
    assert_eq!(
        error_of("shrink-common = maybe\n[g]\n-a\n"),
        "x.sets:1: `shrink-common` is yes or no, not `maybe`"
    );
    assert!(error_of("# nothing\n").contains("no `[group]`"));
    assert_eq!(
        error_of("[g]\n-a\n[rule a,b]\n"),
        "x.sets:3: bad rule name `a,b`"
    );
    assert_eq!(
        error_of("[g]\n-a\n[rule  a b ]\n"),
        "x.sets:3: bad rule name `a b`"
    );
    // The last group is checked at the end of the file, naming its last line.
    assert_eq!(
        error_of("[g]\n-a\n[h]\n\n"),
        "x.sets:4: group `h` has no sets"
    );
    let scoped = |groups: &str| {
        format!(
            "[g]\n-a\n[h]\n-b\n[rule r]\nkind = sort-lines\nstream = stdout\ngroups = {groups}\n"
        )
    };
    assert_eq!(
        error_of(&scoped("g, i")),
        "x.sets:5: rule `r` names no such group `i`"
    );
    assert!(parse("x.sets", &scoped("h, g")).is_ok());
}

#[test]
fn comments_after_something_are_refused() {
    let alone = "comments go on their own line";
    for (text, line) in [
        ("[g]   # sets\n-a\n", 1),
        (
            "[g]\n-a\n[rule r]\t# a rule\nkind = sort-lines\nstream = stdout\n",
            3,
        ),
        ("env.FOO = 0   # note\n[g]\n-a\n", 1),
        ("description = d # what\n[g]\n-a\n", 1),
        ("common = -x # before every set\n[g]\n-a\n", 1),
        ("common = \"-x #\"\n[g]\n-a\n", 1),
        ("[g]\n(none)   # the empty set\n", 2),
        ("[g]\n(none) -a\n", 2),
        ("[g]\n-a -b   # one set\n", 2),
        (
            "[g]\n-a\n[rule r]\nkind = mask\nstream = stdout\npattern = x # y\n",
            6,
        ),
    ] {
        let error = error_of(text);
        assert!(
            error.starts_with(&format!("x.sets:{line}: ")) && error.contains(alone),
            "{text:?}: {error}"
        );
    }
}

#[test]
fn a_header_key_given_twice_is_refused() {
    assert_eq!(
        error_of("common = -a\ncommon = -b\n[g]\n-s\n"),
        "x.sets:2: `common` is given twice (first on line 1)"
    );
    assert!(error_of("env.X = 1\nenv.X = 2\n[g]\n-s\n").contains("`env.X` is given twice"));
    assert!(parse("x.sets", "env.X = 1\nenv.Y = 2\n[g]\n-s\n").is_ok());
}

#[test]
fn an_env_key_names_a_variable_a_shell_could_set() {
    for name in ["", "1X", "A-B", "A B", "\u{e9}"] {
        assert_eq!(
            error_of(&format!("env.{name} = 1\n[g]\n-s\n")),
            format!("x.sets:1: `{name}` is not an environment variable name")
        );
    }
    let file = parse("x.sets", "env._A1 = 1\nenv.b = 2\n[g]\n-s\n").unwrap();
    assert_eq!(
        file.env,
        [
            ("_A1".to_string(), "1".to_string()),
            ("b".into(), "2".into())
        ]
    );
}

#[test]
fn keys_out_of_their_place_are_refused() {
    let header = "header keys go before the first group";
    let rule = "rule keys go in a [rule NAME] section";
    for (text, line, rule_of_place) in [
        ("[g]\n-a\ncommon = -x\n", 3, header),
        ("[g]\n-a\ndescription=d\n", 3, header),
        ("[g]\n-a\nenv.FOO = 1\n", 3, header),
        ("[g]\n-a\nkind = mask\n", 3, rule),
        ("stream = stdout\n[g]\n-a\n", 1, rule),
        (
            "[g]\n-a\n[rule r]\nkind = sort-lines\noperand = x\n",
            5,
            header,
        ),
    ] {
        let error = error_of(text);
        assert!(
            error.starts_with(&format!("x.sets:{line}: ")) && error.contains(rule_of_place),
            "{text:?}: {error}"
        );
    }
}

#[test]
fn a_value_is_read_as_a_json_string_only_when_quoted_at_both_ends() {
    for (value, read) in [
        ("\"caf\\u00e9\"", "caf\u{e9}"),
        ("say \"hi\"", "say \"hi\""),
        ("\"hi and bye", "\"hi and bye"),
        ("\"", "\""),
    ] {
        let file = parse("x.sets", &format!("description = {value}\n[g]\n-a\n"))
            .unwrap_or_else(|e| panic!("{value}: {e}"));
        assert_eq!(file.description, read, "{value}");
    }
}

#[test]
fn a_hash_escaped_or_inside_double_quotes_is_no_comment() {
    let file = parse(
        "x.sets",
        "[g]\n-name a\\ #b\n-path \"c #d\"\n-name \"e\\\" #f\"\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let sets: Vec<&[String]> = file.groups[0].sets.iter().map(|s| &s.args[..]).collect();
    assert_eq!(
        sets,
        [
            &["-name", "a #b"][..],
            &["-path", "c #d"],
            &["-name", "e\" #f"]
        ]
    );
    // Once the quotes close, a `#` that starts a word begins a comment again.
    let error = error_of("[g]\n-name \"a\" #b\n");
    assert!(
        error.starts_with("x.sets:2: ") && error.contains("would begin a comment"),
        "{error}"
    );
}

#[test]
fn an_env_key_without_a_name_is_no_header_key() {
    let rule = "[g]\n-a\n[rule r]\nkind = sort-lines\nstream = stdout\n";
    for key in ["env.", "env.A B"] {
        assert_eq!(
            error_of(&format!("{rule}{key} = 1\n")),
            format!(
                "x.sets:6: unknown rule key `{key}` \
                 (kind, stream, groups, pattern, separator, placeholder, sort-arrays)"
            )
        );
    }
    let error = error_of(&format!("{rule}env.A = 1\n"));
    assert!(
        error.contains("header keys go before the first group"),
        "{error}"
    );
}

#[test]
fn a_bad_header_says_what_a_header_looks_like() {
    for header in ["[a b]", "[]", "[g"] {
        assert_eq!(
            error_of(&format!("{header}\n-a\n")),
            format!("x.sets:1: bad header `{header}` (expected `[group]` or `[rule NAME]`)")
        );
    }
}

#[test]
fn a_rule_header_without_a_name_is_refused_at_its_line() {
    assert_eq!(
        error_of("[g]\n-a\n[rule]\nkind = sort-lines\n"),
        "x.sets:3: a rule needs a name: `[rule NAME]`"
    );
}

#[test]
fn a_hash_inside_a_word_or_quotes_is_kept() {
    let file = parse(
        "x.sets",
        "description = C# walkers\nenv.FOO = \"0 # kept\"\ncommon = -x '#'\n\
         [g]\n-name 'a #b' -a#b\n\"#x\"\n'common' = -x\n--time=ctime\n\
         [rule r]\nkind = mask\nstream = stdout\npattern = \"x #y\"\nplaceholder = [#]\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(file.description, "C# walkers");
    assert_eq!(file.env, [("FOO".to_string(), "0 # kept".to_string())]);
    assert_eq!(file.common, ["-x", "#"]);
    let sets: Vec<&[String]> = file.groups[0].sets.iter().map(|s| &s.args[..]).collect();
    assert_eq!(
        sets,
        [
            &["-name", "a #b", "-a#b"][..],
            &["#x"],
            &["common", "=", "-x"],
            &["--time=ctime"]
        ]
    );
    let (masked, _) = file.rules[0].apply(b"x #y");
    assert_eq!(masked, b"[#]");
}

#[test]
fn the_documented_example_parses() {
    let doc = include_str!("../../docs/comparing.md");
    let (_, section) = doc
        .split_once("## Flag-set files")
        .expect("docs/comparing.md has a flag-set section");
    let (_, block) = section
        .split_once("```text\n")
        .expect("the section has a text block");
    let (example, _) = block.split_once("\n```").expect("the block is closed");
    let file = parse("comparing.md", example).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(file.description, "what these sets exercise");
    assert_eq!(file.common, ["-P", "-c", "-w", "200"]);
    assert_eq!(file.operand, ["{tree}"]);
    assert_eq!(file.env, [("RUST_BACKTRACE".to_string(), "0".to_string())]);
    let sets: Vec<&[String]> = file.groups[0].sets.iter().map(|s| &s.args[..]).collect();
    assert_eq!(
        sets,
        [&[][..], &["-a", "-b", "-d", "1"], &["-X", "{tree}/a"]]
    );
    let rule = rule_named(&file, "permission-list");
    assert!(matches!(
        rule.kind,
        crate::normalize::RuleKind::SortItems { .. }
    ));
    assert!(rule.applies("group-name", crate::outcome::Stream::Stderr));
    assert!(!rule.applies("group-name", crate::outcome::Stream::Stdout));
}

#[test]
fn groups_select_by_name() {
    let file = parse("x.sets", "common = -P\n[a]\n(none)\n-s\n[b]\n-d 1\n").unwrap();
    assert_eq!(file.common, ["-P"]);
    assert_eq!(file.select("all").unwrap().len(), 2);
    assert_eq!(file.select("b").unwrap()[0].sets[0].args, ["-d", "1"]);
    assert_eq!(file.select("a").unwrap()[0].sets[0].label(), "(none)");
    assert!(file
        .select("c")
        .unwrap_err()
        .to_string()
        .contains("groups: a, b"));
}

#[test]
fn the_walk_sets_cover_every_flag() {
    let walk = builtin("walk").unwrap();
    assert!(
        all_sets(&walk).len() >= 20,
        "{} sets",
        all_sets(&walk).len()
    );
    assert_some_set_uses(
        &walk,
        &[
            "-a",
            "-b",
            "--apparent-size",
            "-s",
            "-d",
            "-L",
            "-x",
            "--inodes",
            "-c",
            "-0",
            "--json",
        ],
    );
}

/// Each flag appears in at least one set of the file.
fn assert_some_set_uses(file: &FlagSetFile, flags: &[&str]) {
    let sets = all_sets(file);
    for flag in flags {
        assert!(
            sets.iter().any(|s| s.args.iter().any(|a| a == flag)),
            "no set of {} uses {flag}",
            file.file
        );
    }
}

/// Every set of a built-in file, in file order.
fn all_sets(file: &FlagSetFile) -> Vec<&FlagSet> {
    file.groups.iter().flat_map(|g| &g.sets).collect()
}

fn rule_named<'f>(file: &'f FlagSetFile, name: &str) -> &'f Rule {
    file.rules
        .iter()
        .find(|r| r.name == name)
        .unwrap_or_else(|| panic!("{}: no rule `{name}`", file.file))
}

fn normalized(rule: &Rule, text: &str) -> (String, usize) {
    let (out, count) = rule.apply(text.as_bytes());
    (String::from_utf8(out).unwrap(), count)
}

#[test]
fn every_builtin_parses() {
    for name in builtin_names() {
        let file = builtin(name).unwrap();
        assert!(!file.description.is_empty(), "{name} has no description");
        assert!(!all_sets(&file).is_empty(), "{name} has no sets");
    }
    assert_eq!(
        builtin_names().collect::<Vec<_>>(),
        ["walk", "dust", "du", "find"]
    );
}

#[test]
fn dust_has_the_59_sets_with_their_exact_words() {
    let dust = builtin("dust").unwrap();
    assert_eq!(dust.common, ["-P", "-c", "-w", "200"]);
    assert_eq!(dust.operand, ["{tree}"]);
    let sets = all_sets(&dust);
    assert_eq!(sets.len(), 59);
    let args: Vec<&[String]> = sets.iter().map(|s| s.args.as_slice()).collect();
    let has = |words: &[&str]| args.iter().any(|a| *a == words);
    // The pattern reaches dust as backslash, dot: not `.rs$`, not `\\.rs$`.
    for words in [
        &["-e", r"\.rs$"][..],
        &["-v", r"\.txt$"],
        &["-e", r"\.json$", "-v", "test"],
        &["-f", "-e", r"\.rs$"],
        &["-X", "{tree}/a"],
        &["-X", "{tree}/node_modules"],
        &["-T", "1", "--print-errors"],
        &["-o", "b", "-n", "100000", "-m", "m", "-p"],
        &[],
    ] {
        assert!(has(words), "no set {words:?}");
    }
    assert_eq!(
        args.iter()
            .filter(|a| a.first().is_some_and(|w| w == "-e"))
            .count(),
        2
    );
    // Each `-o b -n 100000` set is that prefix and one of nine endings.
    let full: Vec<Vec<&str>> = args
        .iter()
        .filter(|a| a.starts_with(&["-o".into(), "b".into(), "-n".into(), "100000".into()]))
        .map(|a| a[4..].iter().map(String::as_str).collect())
        .collect();
    assert_eq!(
        full,
        [
            &["-s"][..],
            &["-f"],
            &["-L"],
            &["-x"],
            &["-i", "-p"],
            &["-F", "-p"],
            &["-D", "-p"],
            &["-m", "m", "-p"],
            &["-T", "1", "--print-errors"],
        ]
    );
}

#[test]
fn the_dust_json_group_holds_every_json_set() {
    let dust = builtin("dust").unwrap();
    let json = &dust.select("json").unwrap()[0].sets;
    let with_j = all_sets(&dust)
        .into_iter()
        .filter(|s| s.args.iter().any(|a| a == "-j"))
        .count();
    assert_eq!(json.len(), 6);
    assert_eq!(json.len(), with_j, "a -j set outside the json group");
    assert!(json.iter().all(|s| s.args.iter().any(|a| a == "-j")));
    let groups: Vec<&str> = dust.groups.iter().map(|g| g.name.as_str()).collect();
    for name in [
        "basic", "depth", "links", "filters", "time", "output", "errors",
    ] {
        assert!(groups.contains(&name), "no group {name}: {groups:?}");
    }
}

#[test]
fn dust_error_lists_in_any_order_normalize_to_one_text() {
    let dust = builtin("dust").unwrap();
    for (rule, prefix) in [
        (
            "permission-list",
            "Did not have permissions for directories: ",
        ),
        ("missing-list", "No such file or directory: "),
        ("unknown-error-list", "Unknown Error: "),
    ] {
        let rule = rule_named(&dust, rule);
        assert!(rule.kind.only_reorders(), "{}", rule.name);
        assert!(rule.applies("errors", crate::outcome::Stream::Stderr));
        assert!(!rule.applies("errors", crate::outcome::Stream::Stdout));
        let one = format!("{prefix}{{tree}}/b, {{tree}}/a, {{tree}}/c d\n");
        let other = format!("{prefix}{{tree}}/c d, {{tree}}/a, {{tree}}/b\n");
        let (first, moved) = normalized(rule, &one);
        assert_eq!(moved, 1, "{}", rule.name);
        assert_eq!(first, normalized(rule, &other).0, "{}", rule.name);
        assert_eq!(
            first,
            format!("{prefix}{{tree}}/a, {{tree}}/b, {{tree}}/c d\n")
        );
        // A different list still differs, and other lines are left alone.
        assert_ne!(
            first,
            normalized(rule, &format!("{prefix}{{tree}}/a, {{tree}}/b\n")).0
        );
        let other_line = "Other: b, a\n";
        assert_eq!(normalized(rule, other_line), (other_line.into(), 0));
    }
    // The permission list is only printed with --print-errors.
    let permissions = rule_named(&dust, "permission-list");
    assert!(permissions.applies("every-line", crate::outcome::Stream::Stderr));
    assert!(!permissions.applies("basic", crate::outcome::Stream::Stderr));
}

#[test]
fn dust_panic_thread_ids_are_masked_and_nothing_else() {
    let dust = builtin("dust").unwrap();
    let mask = rule_named(&dust, "panic-thread-id");
    let text = "thread 'main' (12345) panicked at src/main.rs:10:5:\nboom (7)\n";
    let (out, count) = normalized(mask, text);
    assert_eq!(count, 1);
    assert_eq!(
        out,
        "thread 'main' (<id>) panicked at src/main.rs:10:5:\nboom (7)\n"
    );
    assert_eq!(
        out,
        normalized(
            mask,
            "thread 'main' (999) panicked at src/main.rs:10:5:\nboom (7)\n"
        )
        .0
    );
    let old = "thread 'main' panicked at src/main.rs:10:5:\n";
    assert_eq!(normalized(mask, old), (old.into(), 0));
    assert_ne!(
        out,
        normalized(
            mask,
            "thread '<unnamed>' (12345) panicked at src/main.rs:10:5:\nboom (7)\n"
        )
        .0,
        "the thread name still compares"
    );
}

#[test]
fn dust_json_is_compared_raw() {
    // dust prints children sorted by size and name, so JSON needs no rule.
    let dust = builtin("dust").unwrap();
    assert!(!dust
        .rules
        .iter()
        .any(|r| matches!(r.kind, crate::normalize::RuleKind::Json { .. })));
    assert_eq!(dust.rules.len(), 4);
}

#[test]
fn du_covers_its_flags_with_no_rules() {
    let du = builtin("du").unwrap();
    assert!(all_sets(&du).len() >= 25, "{} sets", all_sets(&du).len());
    assert!(du.rules.is_empty());
    assert_some_set_uses(
        &du,
        &[
            "-a",
            "-b",
            "--apparent-size",
            "-s",
            "-d",
            "-L",
            "-x",
            "--inodes",
            "-c",
            "-0",
            "-k",
            "-m",
            "-h",
            "--si",
            "-B",
            "-l",
            "-S",
            "-t",
            "--exclude",
            "--time",
        ],
    );
}

#[test]
fn find_puts_the_tree_first_and_sorts_its_lines() {
    let find = builtin("find").unwrap();
    assert_eq!(find.common, ["{tree}"]);
    assert!(find.operand.is_empty());
    let sets = all_sets(&find);
    assert!(sets.len() >= 20, "{} sets", sets.len());
    assert!(sets.iter().all(|s| !s.args.iter().any(|a| a == "-print0")));
    let printf = sets
        .iter()
        .find(|s| s.args.first().is_some_and(|a| a == "-printf"))
        .unwrap();
    assert_eq!(printf.args[1], r"%s %b %i %n %y %p\n");
    let order = rule_named(&find, "line-order");
    assert!(matches!(order.kind, crate::normalize::RuleKind::SortLines));
    assert!(order.groups.is_none(), "every group");
    assert!(order.applies("printf", crate::outcome::Stream::Stdout));
    assert!(!order.applies("printf", crate::outcome::Stream::Stderr));
    assert_eq!(
        normalized(order, "{tree}/b\n{tree}\n{tree}/a\n").0,
        "{tree}\n{tree}/a\n{tree}/b\n"
    );
}

#[test]
fn argv0_names_the_program_both_arms_run_as() {
    let named = parse("x.sets", "argv0 = dust\n[g]\n-a\n").unwrap();
    assert_eq!(named.argv0.as_deref(), Some("dust"));
    let unnamed = parse("x.sets", "[g]\n-a\n").unwrap();
    assert_eq!(unnamed.argv0, None);
    assert_eq!(
        error_of("argv0 =\n[g]\n-a\n"),
        "x.sets:1: `argv0` names the program: it is empty"
    );
}
