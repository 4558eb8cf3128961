//! The dashboard's routes (issue 24, ADR 0006): the shell and its assets are served with their content types and
//! their Content-Security-Policy, are public when tokens are configured (they hold no study data), and leave the
//! API's own 404, 405 and 401 answers as they were. What the pages draw is tested in a browser (.ci/browser).

use crate::common;

use common::TestServer;

#[test]
fn shell_and_assets_are_served_with_their_types_and_policy() {
    let srv = TestServer::sqlite();
    for path in ["/", "/studies/6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f"] {
        let r = srv.get(path).expect(200);
        assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"), "{path}");
        assert!(r.text.contains(r#"<script src="/dashboard/app.js" defer></script>"#), "{path}: {}", r.text);
        let csp = r.header("content-security-policy").expect("a CSP");
        assert!(csp.starts_with("default-src 'self'; script-src 'self';"), "{path}: {csp}");
        assert!(!csp.contains("unsafe-inline") && !csp.contains("unsafe-eval"), "{path}: {csp}");
        assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
    }
    for (path, ty, needle) in [
        ("/dashboard/app.js", "text/javascript; charset=utf-8", "'use strict';"),
        ("/dashboard/app.css", "text/css; charset=utf-8", ".panel"),
        ("/dashboard/favicon.svg", "image/svg+xml", "<svg"),
    ] {
        let r = srv.get(path).expect(200);
        assert_eq!(r.header("content-type"), Some(ty), "{path}");
        assert_eq!(r.header("cache-control"), Some("no-cache"), "{path}");
        assert!(r.text.contains(needle), "{path}");
    }
    // The API's answers are unchanged around the new routes.
    assert_eq!(srv.get("/dashboard/nope").expect(404).json["status"], 404);
    assert_eq!(srv.get("/v1/nowhere").expect(404).json["status"], 404);
    srv.get("/studies/").expect(404);
    srv.request("POST", "/", None, &[]).expect(405);
    let api = srv.get("/v1/studies").expect(200);
    assert_eq!(api.header("content-security-policy"), Some("default-src 'none'; frame-ancestors 'none'"));
}

#[test]
fn with_tokens_the_shell_is_public_and_the_api_is_not() {
    let srv = TestServer::sqlite_with(|c| c.api_tokens = vec!["secret-1".into()]);
    for path in ["/", "/studies/6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f", "/dashboard/app.js", "/dashboard/app.css"] {
        srv.get(path).expect(200);
    }
    srv.get("/v1/studies").expect(401);
    srv.get("/v1/studies/6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f").expect(401);
    // The public paths answer nothing but the shell: another method is 405, as without tokens.
    srv.request("POST", "/", None, &[]).expect(405);
}
