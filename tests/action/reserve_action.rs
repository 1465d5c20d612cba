//! The policy's reserve through the Action, with the real sandbox: the
//! policy's first engine cannot be reached, so the reserve (the runner's
//! Docker socket) runs the exact code — prepared ahead while the bot talks
//! to GitHub — and the posted answer, the job summary and the run record
//! say which environment ran it and why.

use crate::support::action_fixture::{ActionFixture, COMMENT, fenced, snapshot_sandbox_comment};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_answer_names_the_reserve_that_ran_the_code_and_why() {
    let f = ActionFixture::new().await;
    // A socket no machine has (the policy's hash is in the record).
    let dead = "unix:///nonexistent/compute-bot/nobody.sock";
    f.policy(&format!(
        "version: 1\nsandbox:\n  engine: {dead}\n  reserve:\n    engine: unix:///var/run/docker.sock\n"
    ));
    let code = "import json\nprint(json.dumps({\"answer\": 6 * 7}))\n";
    f.comment("alice", &format!("/compute the answer\n{}", fenced(code)));
    let run = f.run(COMMENT, "9801").await;
    assert_eq!(run.code, 0, "{}", run.log());
    assert_eq!(
        serde_json::from_str::<Value>(run.out("result")).unwrap(),
        json!({"answer": 42})
    );
    let body = &f.bot_comments(7)[0].body;
    // The reserve ran it, on the runner's socket, because the first engine
    // (`dead`) cannot be reached.
    snapshot_sandbox_comment("reserve_answer", body);
    let report = f.report(&run);
    let env = &report["record"]["runtime"]["environment"];
    assert_eq!(env["role"], "reserve", "{report}");
    assert_eq!(env["engine"], "unix:///var/run/docker.sock");
}
