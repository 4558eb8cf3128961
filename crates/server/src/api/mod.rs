//! The HTTP API: router, OpenAPI document, paging; the handlers parse requests, call the [`crate::service`] layer
//! and build responses.

mod csv_import;
pub mod document;
mod insight;
mod observations;
mod pairs;
mod studies;
mod suggestions;
mod system;
pub mod types;

use axum::Router;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use utoipa_swagger_ui::SwaggerUi;

use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use crate::store::Page;
use types::PageQuery;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "bayesd",
        description = "Bayesian optimisation as an ask-tell HTTP service: create a study, ask for suggestions, \
                       tell observations. Errors are RFC 9457 problem documents (application/problem+json) whose \
                       `errors[].field` names each invalid field.",
        license(name = "MIT", identifier = "MIT")
    ),
    modifiers(&BearerAuth),
    tags(
        (name = "studies", description = "Create, list, get and archive studies."),
        (name = "suggestions", description = "Ask: points to evaluate next."),
        (name = "observations", description = "Tell: what happened, one at a time or in bulk."),
        (name = "model", description = "Best point and posterior predictions."),
        (name = "system", description = "Health, readiness, metrics.")
    )
)]
struct ApiDoc;

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some("Required on every route but health and docs when the server has API tokens."))
                    .build(),
            ),
        );
        openapi.security =
            Some(vec![utoipa::openapi::security::SecurityRequirement::new("bearer", Vec::<String>::new())]);
    }
}

fn api_router() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .routes(routes!(studies::create_study, studies::list_studies))
        .routes(routes!(studies::get_study, studies::archive_study))
        .routes(routes!(suggestions::create_suggestions, suggestions::list_suggestions))
        .routes(routes!(suggestions::get_suggestion, suggestions::abandon_suggestion))
        .routes(routes!(observations::create_observation, observations::list_observations))
        .routes(routes!(observations::create_observation_batch))
        .routes(routes!(observations::get_observation))
        .routes(routes!(pairs::upload_pairs))
        .routes(routes!(insight::best))
        .routes(routes!(insight::predict))
        .routes(routes!(system::healthz))
        .routes(routes!(system::readyz))
        .routes(routes!(system::metrics))
}

/// The OpenAPI document the server serves (and `bayesd openapi` prints): utoipa's, made true for strict
/// validators by [`document::tighten`].
pub fn openapi() -> serde_json::Value {
    let doc = serde_json::to_value(api_router().split_for_parts().1).unwrap_or_default();
    document::tighten(doc)
}

/// The complete application: the routes, the API documentation, authentication and the HTTP layers.
pub fn app(state: AppState) -> Router {
    let router = api_router().split_for_parts().0;
    let docs = Router::from(SwaggerUi::new("/docs").external_url_unchecked("/openapi.json", openapi()))
        .layer(crate::http_layers::docs_csp());
    let router = router
        .merge(docs)
        .merge(crate::ui::router())
        .fallback(|| async { ApiError::no_route() })
        .method_not_allowed_fallback(|| async { ApiError::method_not_allowed() })
        .layer(axum::middleware::from_fn_with_state(state.clone(), crate::auth::require_token));
    crate::http_layers::around(router, &state).with_state(state)
}

/// A page request from the query (`limit` 1–1000, default 100; `after` a cursor).
pub(crate) fn page_of(q: &PageQuery) -> ApiResult<Page> {
    let limit = q.limit.unwrap_or(100);
    if !(1..=1000).contains(&limit) {
        return Err(ApiError::bad_field("limit", "must be between 1 and 1000"));
    }
    let after = match q.after.as_deref() {
        None | Some("") => 0,
        Some(c) => c
            .parse::<i64>()
            .ok()
            .filter(|v| *v >= 0)
            .ok_or_else(|| ApiError::bad_field("after", "not a cursor returned by this API (use next_cursor)"))?,
    };
    Ok(Page { after, limit })
}

/// The next cursor after a page of `len` rows ending at `last_seq`.
pub(crate) fn next_cursor(page: Page, len: usize, last_seq: Option<i64>) -> Option<String> {
    (len as i64 == page.limit).then_some(last_seq).flatten().map(|s| s.to_string())
}
