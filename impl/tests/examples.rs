//! The examples in `examples/` run to completion and say what they should. Each example's
//! body is a function that this test calls, so the examples are not only compiled but run.

#[path = "../examples/webhook_sender.rs"]
#[allow(dead_code)] // its `main`
mod webhook_sender;

#[path = "../examples/order_pipeline.rs"]
#[allow(dead_code)]
mod order_pipeline;

#[path = "../examples/order_pipeline_async.rs"]
#[allow(dead_code)]
mod order_pipeline_async;

fn printed(run: impl FnOnce(&mut Vec<u8>) -> Result<(), Box<dyn std::error::Error>>) -> String {
    let mut out = Vec::new();
    if let Err(e) = run(&mut out) {
        panic!("the example failed: {e}");
    }
    String::from_utf8(out).expect("UTF-8 output")
}

#[test]
fn the_webhook_sender_delivers_retries_and_gives_up_on_a_gone_endpoint() {
    let out = printed(webhook_sender::run);
    assert_eq!(
        out,
        "invoice-paid-17: delivered on attempt 1\n\
         invoice-paid-18: attempt 1 failed, will retry\n\
         invoice-paid-19: dead after attempt 1 (permanent)\n\
         invoice-paid-18: attempt 2 failed, will retry\n\
         invoice-paid-18: delivered on attempt 3\n\
         done 2, dead 1\n\
         dead: invoice-paid-19 last error: HTTP/1.1 410 Gone\n"
    );
}

/// What both order pipelines end with: the refused order left neither a row nor a job.
const ORDERS_OUTCOME: &str = "\
order 1 placed
order 2 placed
order 3 refused: an order must cost something
deliver-order-1: delivered on attempt 1
deliver-order-2: attempt 1 failed, will retry
deliver-order-2: delivered on attempt 2
order 1 (ada): 1 row(s), delivery done after 1 attempt(s)
order 2 (grace): 1 row(s), delivery done after 2 attempt(s)
order 3 (edsger): 0 row(s), no delivery job
";

#[test]
fn the_order_pipeline_commits_each_order_with_its_delivery() {
    assert_eq!(printed(order_pipeline::run), ORDERS_OUTCOME);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_async_order_pipeline_ends_as_the_sync_one() {
    let lines = match order_pipeline_async::run().await {
        Ok(lines) => lines,
        Err(e) => panic!("the example failed: {e}"),
    };
    assert_eq!(lines.iter().map(|line| format!("{line}\n")).collect::<String>(), ORDERS_OUTCOME);
}
