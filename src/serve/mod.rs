//! `retryq serve`'s dashboard and `/metrics`: the routes (`routes`) over the store, the HTML
//! (`page`, with the activity charts of `activity` and `chart`, the bulk actions of `bulk`,
//! the text filters of `search` and the workers page of `workers`), the exposition
//! (`crate::metrics`), who may use them (`guard`, with its `sessions`), the requests and
//! responses they pass (`http`), and the server that carries them within its bounds
//! (`server`, reading heads with `wire`). The command that starts it is `cmd/serve.rs`.

pub mod activity;
pub mod bulk;
pub mod chart;
pub mod guard;
pub mod http;
pub mod page;
pub mod routes;
pub mod search;
pub mod server;
pub mod sessions;
pub mod wire;
pub mod workers;
