//! Who may do what: `Policy::authorize`, the one decision, from the policy's
//! `who` and `escalation` sections.

use compute_bot::policy::{Act, Actor, Authorization, Permission, Policy};

fn actor(login: &str, is_bot: bool, edited: bool) -> Actor {
    Actor {
        login: login.into(),
        is_bot,
        edited,
    }
}

/// The reason the policy ignores `actor` asking for `act`, if it does.
fn ignored(p: &Policy, actor: &Actor, act: Act) -> Option<String> {
    match p.authorize(actor, act) {
        Authorization::Ignore(why) => Some(why.to_string()),
        Authorization::NeedsPermission(_) => None,
    }
}

/// Both steps of the decision; `Err` is the reason, ignored or refused.
fn decide(
    p: &Policy,
    login: &str,
    has: Permission,
    is_bot: bool,
    edited: bool,
    act: Act,
) -> Result<(), String> {
    match p.authorize(&actor(login, is_bot, edited), act) {
        Authorization::Ignore(why) => Err(why.to_string()),
        Authorization::NeedsPermission(check) => {
            assert_eq!(check.login(), login);
            check.decide(has).map_err(|e| e.to_string())
        }
    }
}

fn run(p: &Policy, login: &str, has: Permission) -> Result<(), String> {
    decide(p, login, has, false, false, Act::Run)
}

fn approve(p: &Policy, login: &str, has: Permission) -> Result<(), String> {
    decide(p, login, has, false, false, Act::Approve)
}

#[test]
fn who_and_escalation_decide_triggers_and_approvals() {
    let p = Policy::from_yaml_str(
        "who:\n  users: [Alice]\nescalation:\n  approvers: [bob]\n",
        "x.yml",
    )
    .unwrap();
    assert!(run(&p, "alice", Permission::Write).is_ok());
    assert!(run(&p, "mallory", Permission::Admin).is_err());
    let e = run(&p, "alice", Permission::Read).unwrap_err();
    assert!(e.contains("at least write"), "{e}");
    assert!(decide(&p, "alice", Permission::Admin, true, false, Act::Run).is_err());
    assert!(decide(&p, "alice", Permission::Admin, false, true, Act::Run).is_err());
    assert!(approve(&p, "Bob", Permission::Maintain).is_ok());
    assert!(approve(&p, "bob", Permission::Write).is_err());
    assert!(approve(&p, "alice", Permission::Admin).is_err());
    let d = Policy::default();
    assert!(run(&d, "anyone", Permission::Write).is_ok());
    assert!(approve(&d, "anyone", Permission::Admin).is_ok());
}

#[test]
fn bots_and_edited_comments_are_ignored_before_the_permission_is_needed() {
    let p = Policy::default();
    for act in [Act::Run, Act::Approve, Act::Deny] {
        let bot = ignored(&p, &actor("dependabot[bot]", true, false), act);
        assert!(matches!(bot, Some(why) if why.contains("bots")), "{act:?}");
        let edit = ignored(&p, &actor("alice", false, true), act);
        assert!(
            matches!(edit, Some(why) if why.contains("edited")),
            "{act:?}"
        );
        assert_eq!(ignored(&p, &actor("alice", false, false), act), None);
    }
    // A policy that allows both still asks for the permission.
    let lenient = Policy::from_yaml_str(
        "who:\n  allow_bots: true\n  allow_edited_comments: true\n",
        "x.yml",
    )
    .unwrap();
    let bot_edit = actor("dependabot[bot]", true, true);
    let Authorization::NeedsPermission(check) = lenient.authorize(&bot_edit, Act::Run) else {
        panic!("a lenient policy ignored the bot");
    };
    assert!(check.decide(Permission::Read).is_err());
    assert!(
        decide(
            &lenient,
            "dependabot[bot]",
            Permission::Write,
            true,
            true,
            Act::Run
        )
        .is_ok()
    );
}

#[test]
fn no_access_is_never_enough_and_the_reason_names_the_setting() {
    let p = Policy::from_yaml_str("who:\n  min_permission: read\n", "x.yml").unwrap();
    assert!(run(&p, "x", Permission::Read).is_ok());
    let e = run(&p, "x", Permission::None).unwrap_err();
    assert!(
        e.contains("who.min_permission") && e.contains("none"),
        "{e}"
    );
    let e = approve(&p, "x", Permission::Write).unwrap_err();
    assert!(e.contains("escalation.min_permission"), "{e}");
}
