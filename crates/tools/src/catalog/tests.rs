//! Tests of the catalog.

use super::*;

/// A tool list cached before its server's secret was configured (or by an older
/// version) does not show the secret: the cache is redacted as it is loaded.
#[tokio::test]
async fn a_cached_description_quoting_a_secret_is_redacted() {
    const SECRET: &str = "wx-secret-0123456789";
    let dir = std::env::temp_dir().join(format!("cem-catalog-secret-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let text = json!({"mcpServers": {"weather": {
            "command": "/nonexistent/weather-server", "env": {"WEATHER_KEY": SECRET}}}});
    let path = std::path::Path::new("/x/mcp.json");
    let config = crate::config::Config::parse(&text.to_string(), path, None).unwrap();
    let cache = ToolCache::in_dir(Some(dir.clone()), &config);
    let tools: Vec<Tool> = serde_json::from_value(json!([{"name": "get_forecast",
            "description": format!("Weather forecast; key {SECRET}"),
            "inputSchema": {"type": "object"}}]))
    .unwrap();
    cache.store("weather", &tools);
    let settings = crate::config::Settings::default();
    let catalog = Catalog::with_cache(Arc::new(Upstreams::new(&config, &settings)), cache);
    let params = SearchParams {
        query: "forecast",
        detail: Some("full"),
        ..Default::default()
    };
    let found = catalog
        .search(&params, &ToolAllowlist::allow_all())
        .await
        .unwrap();
    assert!(!found.to_string().contains(SECRET), "{found}");
    assert!(found.to_string().contains("key [redacted]"), "{found}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The disk cache makes a server's tools searchable before it is started (here: never
/// startable), and a search that names it tries to start it and says it failed.
#[tokio::test]
async fn cached_tools_are_searchable_without_starting_the_server() {
    let dir = std::env::temp_dir().join(format!("cem-catalog-cache-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let text = json!({"mcpServers": {"weather": {"command": "/nonexistent/weather-server"}}});
    let config =
        crate::config::Config::parse(&text.to_string(), std::path::Path::new("/x/mcp.json"), None)
            .unwrap();
    let cache = ToolCache::in_dir(Some(dir.clone()), &config);
    let tools: Vec<Tool> = serde_json::from_value(json!([
            {"name": "get_forecast", "description": "Weather forecast for a city", "inputSchema": {"type": "object"}},
            {"name": "get_alerts", "description": "Weather alerts for a region", "inputSchema": {"type": "object"}},
            {"name": "get_radar", "description": "Weather radar image", "inputSchema": {"type": "object"}}
        ]))
        .unwrap();
    cache.store("weather", &tools);
    let catalog = Catalog::with_cache(
        Arc::new(Upstreams::new(&config, &crate::config::Settings::default())),
        cache,
    );
    let allow = ToolAllowlist::allow_all();
    let found = catalog
        .search(
            &SearchParams {
                query: "forecast for paris",
                ..Default::default()
            },
            &allow,
        )
        .await
        .unwrap();
    assert_eq!(
        found["tools"][0]["name"], "mcp__weather__get_forecast",
        "{found}"
    );
    assert!(found.get("unavailable").is_none(), "{found}");
    let named = catalog
        .search(
            &SearchParams {
                query: "weather forecast",
                ..Default::default()
            },
            &allow,
        )
        .await
        .unwrap();
    assert_eq!(
        named["tools"][0]["name"], "mcp__weather__get_forecast",
        "{named}"
    );
    assert!(
        named["unavailable"][0]
            .as_str()
            .unwrap()
            .contains("weather"),
        "{named}"
    );
    let first = catalog
        .search(
            &SearchParams {
                query: "",
                limit: Some(2),
                ..Default::default()
            },
            &allow,
        )
        .await
        .unwrap();
    assert_eq!(
        (first["total"].clone(), first["nextCursor"].clone()),
        (json!(3), json!("2")),
        "{first}"
    );
    let second = catalog
        .search(
            &SearchParams {
                query: "",
                limit: Some(2),
                cursor: Some("2"),
                ..Default::default()
            },
            &allow,
        )
        .await
        .unwrap();
    assert_eq!(second["tools"].as_array().unwrap().len(), 1, "{second}");
    assert!(second.get("nextCursor").is_none(), "{second}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn pages_follow_the_cursor() {
    let catalog = Catalog::new(Arc::new(Upstreams::new(
        &crate::config::Config::default(),
        &crate::config::Settings::default(),
    )));
    let allow = ToolAllowlist::allow_all();
    let bad = catalog
        .search(
            &SearchParams {
                query: "x",
                cursor: Some("zz"),
                ..Default::default()
            },
            &allow,
        )
        .await;
    assert!(bad.unwrap_err().to_string().contains("invalid cursor"));
    let none = catalog
        .search(
            &SearchParams {
                query: "x",
                ..Default::default()
            },
            &allow,
        )
        .await
        .unwrap();
    assert_eq!(
        none,
        json!({"tools": [], "total": 0, "query": none["query"], "lazyLoaded": []})
    );
}
