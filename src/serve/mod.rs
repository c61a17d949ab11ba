//! `retryq serve`'s dashboard and `/metrics`: the routes (`routes`) over the store, the HTML
//! (`page`), the exposition (`metrics`), who may use them (`guard`) and the requests and
//! responses they pass (`http`). The command that starts it is `cmd/serve.rs`.

pub mod guard;
pub mod http;
pub mod metrics;
pub mod page;
pub mod routes;
