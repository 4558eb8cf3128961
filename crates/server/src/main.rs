//! `bayesd`: serve the API (default), apply migrations, or print the OpenAPI document.

use std::io::IsTerminal as _;

use clap::{Parser, Subcommand};
use server::Config;

#[derive(Debug, Parser)]
#[command(name = "bayesd", version, about = "Bayesian optimisation as an ask-tell HTTP service")]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    config: Config,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the HTTP API (the default); migrations run at start.
    Serve,
    /// Apply database migrations and exit.
    Migrate,
    /// Print the OpenAPI document (regenerates openapi/openapi.json).
    Openapi,
}

/// Logs to stderr: plain text (coloured only on a terminal), or JSON lines with `BAYESD_LOG_FORMAT=json`.
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,sqlx=warn"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    if std::env::var("BAYESD_LOG_FORMAT").is_ok_and(|v| v.eq_ignore_ascii_case("json")) {
        builder.json().init();
    } else {
        builder.init();
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command.unwrap_or(Command::Serve) {
        Command::Openapi => {
            println!("{}", serde_json::to_string_pretty(&server::openapi())?);
        }
        Command::Migrate => {
            init_logging();
            let store = server::store::connect(&cli.config.database_url, 2).await?;
            store.migrate().await?;
            tracing::info!(database = store.backend(), "migrations applied");
        }
        Command::Serve => {
            init_logging();
            let listener = tokio::net::TcpListener::bind(&cli.config.bind).await?;
            server::serve(cli.config, listener, server::shutdown_signal()).await?;
        }
    }
    Ok(())
}
