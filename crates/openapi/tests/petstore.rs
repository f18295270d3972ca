//! A petstore-like document, 3.0 in JSON and 3.1 in YAML: listing, tools, requests.
#![allow(clippy::unwrap_used, reason = "tests")]

use std::collections::BTreeMap;

use openapi::{
    ApiKeyLocation, Format, Method, ParseOptions, RequestError, SecurityScheme, Spec, Version,
    build_request,
};
use serde_json::json;
use url::Url;

const PETSTORE_30: &[u8] = include_bytes!("fixtures/petstore-3.0.json");
const PETSTORE_31: &[u8] = include_bytes!("fixtures/petstore-3.1.yaml");

fn spec30() -> Spec {
    Spec::parse(PETSTORE_30, Format::Sniff).unwrap()
}

fn base() -> Url {
    Url::parse("https://api.example.com/v1/").unwrap()
}

#[test]
fn lists_operations_in_document_order() {
    let spec = spec30();
    assert_eq!(spec.version(), Version::V3_0);
    assert_eq!(spec.title().as_deref(), Some("Petstore"));
    let listed: Vec<(&str, Method, &str)> = spec
        .operations()
        .iter()
        .map(|o| (o.name.as_str(), o.method, o.path.as_str()))
        .collect();
    assert_eq!(
        listed,
        vec![
            ("listPets", Method::Get, "/pets"),
            ("createPet", Method::Post, "/pets"),
            ("getPet", Method::Get, "/pets/{petId}"),
            ("replacePet", Method::Put, "/pets/{petId}"),
            ("deletePet", Method::Delete, "/pets/{petId}"),
            ("uploadPhoto", Method::Post, "/pets/{petId}/photo"),
            ("put_pets_petId_notes", Method::Put, "/pets/{petId}/notes"),
            ("search", Method::Get, "/search"),
        ]
    );
    let list = &spec.operations()[0];
    assert_eq!(list.summary.as_deref(), Some("List pets"));
    assert_eq!(list.tags, vec!["pets".to_owned()]);
    assert!(spec.warnings().is_empty(), "{:?}", spec.warnings());
}

#[test]
fn a_tool_has_schemas_annotations_and_credentials() {
    let spec = spec30();
    let op = spec.operation("listPets").unwrap();
    assert_eq!(
        op.description,
        "List pets\n\nReturns every pet the caller may see."
    );
    let props = &op.input_schema["properties"];
    assert_eq!(
        props["limit"],
        json!({"type": ["integer", "null"], "maximum": 100})
    );
    assert_eq!(props["tags"]["type"], "array");
    assert!(props.get("X-Request-Id").is_some());
    assert!(props.get("Accept").is_none(), "Accept headers are ignored");
    assert!(props.get("session").is_some());
    assert_eq!(op.input_schema["additionalProperties"], false);
    assert!(op.input_schema.get("required").is_none());
    assert!(op.warnings.iter().any(|w| w.message.contains("Accept")));
    // The 200 response, not `default`; writeOnly leaves the output, readOnly stays.
    let out = op.output_schema.as_ref().unwrap();
    assert_eq!(out["type"], "array");
    let pet = &out["items"]["allOf"];
    assert!(pet[0]["properties"].get("secret").is_none());
    assert_eq!(
        pet[0]["properties"]["tag"]["type"],
        json!(["string", "null"])
    );
    assert_eq!(pet[1]["properties"]["id"]["readOnly"], true);
    assert!(op.annotations.read_only && op.annotations.idempotent && !op.annotations.destructive);
    // Global security: the API key in a header.
    assert_eq!(op.security.len(), 1);
    assert_eq!(op.security[0].schemes[0].name, "apiKey");
    assert_eq!(
        op.security[0].schemes[0].scheme,
        SecurityScheme::ApiKey {
            name: "X-API-Key".to_owned(),
            location: ApiKeyLocation::Header
        }
    );
}

#[test]
fn bodies_required_fields_and_operation_security() {
    let spec = spec30();
    let op = spec.operation("createPet").unwrap();
    assert_eq!(op.input_schema["required"], json!(["body"]));
    let body = &op.input_schema["properties"]["body"];
    assert_eq!(body["required"], json!(["name"]));
    assert_eq!(body["properties"]["kind"]["enum"], json!(["cat", "dog"]));
    assert!(
        body["properties"].get("secret").is_some(),
        "writeOnly stays in input"
    );
    assert!(!op.annotations.read_only && !op.annotations.idempotent && !op.annotations.destructive);
    // Two alternatives: bearer, or OAuth2 client credentials with a scope.
    assert_eq!(op.security.len(), 2);
    assert_eq!(
        op.security[0].schemes[0].scheme,
        SecurityScheme::Bearer {
            format: Some("JWT".to_owned())
        }
    );
    assert_eq!(op.security[1].schemes[0].scopes, vec!["write".to_owned()]);
    assert_eq!(
        op.security[1].schemes[0].scheme,
        SecurityScheme::OAuth2 {
            client_credentials_token_url: Some("https://auth.example/token".to_owned())
        }
    );
    let out = op.output_schema.unwrap();
    assert!(out["allOf"][1]["properties"].get("id").is_some());

    let get = spec.operation("getPet").unwrap();
    assert_eq!(get.input_schema["required"], json!(["petId"]));
    assert_eq!(
        get.input_schema["properties"]["petId"],
        json!({"type": "string", "description": "The pet's id"})
    );
    let input_pet = spec.operation("createPet").unwrap();
    assert!(
        input_pet.input_schema["properties"]["body"]["properties"]
            .get("id")
            .is_none()
    );

    let delete = spec.operation("deletePet").unwrap();
    assert!(delete.security.is_empty(), "`security: []` needs nothing");
    assert!(
        delete.annotations.destructive
            && delete.annotations.idempotent
            && !delete.annotations.read_only
    );
    let put = spec.operation("replacePet").unwrap();
    assert!(put.annotations.idempotent && !put.annotations.read_only);
    // Operation-level parameters replace path-level ones of the same name and location.
    let upload = spec.operation("uploadPhoto").unwrap();
    assert_eq!(
        upload.input_schema["properties"]["petId"]["type"],
        "integer"
    );
    assert_eq!(spec.security_schemes()["basic"], SecurityScheme::Basic);
    assert_eq!(
        spec.security_schemes()["queryKey"],
        SecurityScheme::ApiKey {
            name: "api_key".to_owned(),
            location: ApiKeyLocation::Query
        }
    );
}

#[test]
fn operations_are_found_by_name_any_case_or_operation_id() {
    let spec = spec30();
    assert_eq!(spec.operation("LISTPETS").unwrap().name, "listPets");
    assert_eq!(
        spec.operation("put_pets_petId_notes").unwrap().method,
        Method::Put
    );
    let err = spec.operation("nope").unwrap_err();
    assert!(err.to_string().contains("nope"));
}

#[test]
fn server_urls_take_variables_checked_against_enums() {
    let spec = spec30();
    assert_eq!(
        spec.server_url(&BTreeMap::new()).unwrap().as_str(),
        "https://eu.petstore.example/v1"
    );
    let us = BTreeMap::from([("region".to_owned(), "us".to_owned())]);
    assert_eq!(
        spec.server_url(&us).unwrap().as_str(),
        "https://us.petstore.example/v1"
    );
    let bad = BTreeMap::from([("region".to_owned(), "mars".to_owned())]);
    assert!(
        spec.server_url(&bad)
            .unwrap_err()
            .to_string()
            .contains("mars")
    );
    let unknown = BTreeMap::from([("port".to_owned(), "1".to_owned())]);
    assert!(
        spec.server_url(&unknown)
            .unwrap_err()
            .to_string()
            .contains("port")
    );
    let evil = BTreeMap::from([("basePath".to_owned(), "v1@evil.example".to_owned())]);
    assert!(spec.server_url(&evil).is_err());
}

#[test]
fn operation_and_path_servers_come_first() {
    let doc = json!({"openapi": "3.1.0", "info": {"title": "t", "version": "1"},
        "servers": [{"url": "https://root.example"}],
        "paths": {
            "/a": {"servers": [{"url": "https://path.example/{v}", "variables": {"v": {"default": "v2"}}}],
                "get": {"operationId": "a", "responses": {}},
                "put": {"operationId": "b", "servers": [{"url": "https://op.example"}], "responses": {}}},
            "/c": {"get": {"operationId": "c", "responses": {}}}}});
    let spec = Spec::parse(doc.to_string().as_bytes(), Format::Json).unwrap();
    let url = |name: &str| {
        spec.operation_server_url(&spec.operation(name).unwrap(), &BTreeMap::new())
            .unwrap()
    };
    assert_eq!(url("a").as_str(), "https://path.example/v2");
    assert_eq!(url("b").as_str(), "https://op.example/");
    assert_eq!(url("c").as_str(), "https://root.example/");
}

#[test]
fn relative_servers_resolve_against_the_location() {
    let no_location = Spec::parse(PETSTORE_31, Format::Yaml).unwrap();
    assert!(no_location.server_url(&BTreeMap::new()).is_err());
    let options = ParseOptions {
        location: Some(Url::parse("https://petstore.example/openapi/spec.yaml").unwrap()),
        ..ParseOptions::default()
    };
    let spec = Spec::parse_with(PETSTORE_31, &options).unwrap();
    assert_eq!(
        spec.server_url(&BTreeMap::new()).unwrap().as_str(),
        "https://petstore.example/api/v3"
    );
}

#[test]
fn yaml_31_document() {
    let spec = Spec::parse(PETSTORE_31, Format::Sniff).unwrap();
    assert_eq!(spec.version(), Version::V3_1);
    let names: Vec<&str> = spec.operations().iter().map(|o| o.name.as_str()).collect();
    assert_eq!(names, ["listPets", "createPet", "getPet", "deletePet"]);
    let list = spec.operation("listPets").unwrap();
    assert_eq!(
        list.input_schema["properties"]["limit"],
        json!({"type": ["integer", "null"], "exclusiveMinimum": 0})
    );
    // `200:` is an integer key in YAML; the output schema is still found. Pet refers to
    // itself: a `$defs` entry and a `$ref`.
    let out = list.output_schema.unwrap();
    assert_eq!(
        out["items"]["properties"]["parent"],
        json!({"$ref": "#/$defs/Pet"})
    );
    assert_eq!(
        out["$defs"]["Pet"]["properties"]["parent"],
        json!({"$ref": "#/$defs/Pet"})
    );
    // A `$ref` with a sibling description (3.1): the description is kept.
    let create = spec.operation("createPet").unwrap();
    let body = &create.input_schema["properties"]["body"];
    assert_eq!(body["description"], "The new pet.");
    assert!(
        body["properties"].get("id").is_none(),
        "readOnly leaves the input"
    );
    assert_eq!(create.input_schema["$defs"]["Pet"]["type"], "object");
    // An anchor reused as an alias: both operations get the parameter.
    let delete = spec.operation("deletePet").unwrap();
    let req = build_request(&delete, &base(), &json!({"petId": "7"})).unwrap();
    assert_eq!(req.url.as_str(), "https://api.example.com/v1/pets/7");
    assert_eq!(req.method, Method::Delete);
}

#[test]
fn path_query_header_cookie() {
    let spec = spec30();
    let op = spec.operation("listPets").unwrap();
    let req = build_request(
        &op,
        &base(),
        &json!({"limit": 5, "tags": ["a b", "c,d"], "X-Request-Id": "r1", "session": "s;1 x"}),
    )
    .unwrap();
    assert_eq!(
        req.url.as_str(),
        "https://api.example.com/v1/pets?limit=5&tags=a%20b,c%2Cd"
    );
    assert_eq!(
        req.headers,
        vec![
            ("x-request-id".to_owned(), "r1".to_owned()),
            ("cookie".to_owned(), "session=s%3B1%20x".to_owned())
        ]
    );
    assert_eq!(req.body, None);
    // null means absent.
    let req = build_request(&op, &base(), &json!({"limit": null})).unwrap();
    assert_eq!(req.url.as_str(), "https://api.example.com/v1/pets");
    // The base's own query stays.
    let with_query = Url::parse("https://api.example.com/v1?api-version=2").unwrap();
    let req = build_request(&op, &with_query, &json!({"limit": 1})).unwrap();
    assert_eq!(
        req.url.as_str(),
        "https://api.example.com/v1/pets?api-version=2&limit=1"
    );
}

#[test]
fn query_styles() {
    let spec = spec30();
    let op = spec.operation("search").unwrap();
    let props = op.input_schema["properties"].as_object().unwrap();
    assert!(
        props.contains_key("query_id")
            && props.contains_key("header_id")
            && !props.contains_key("id")
    );
    let req = build_request(
        &op,
        &base(),
        &json!({
            "filter": {"color": "red", "size": 3},
            "ids": [1, 2],
            "words": ["x", "y"],
            "q": "a/b?c:d&e=f#g+h",
            "multi": ["m1", "m2"],
            "obj": {"k": "v", "n": 1},
            "objx": {"role": "admin"},
            "query_id": "7",
            "header_id": "8",
            "json": {"a": [1]}
        }),
    )
    .unwrap();
    assert_eq!(
        req.url.query().unwrap(),
        "filter[color]=red&filter[size]=3&ids=1|2&words=x%20y&q=a/b?c:d%26e%3Df%23g%2Bh\
         &multi=m1&multi=m2&obj=k,v,n,1&role=admin&id=7&json=%7B%22a%22%3A%5B1%5D%7D"
    );
    assert_eq!(req.headers, vec![("id".to_owned(), "8".to_owned())]);
}

#[test]
fn bodies_json_form_multipart_text() {
    let spec = spec30();
    let create = spec.operation("createPet").unwrap();
    let req = build_request(
        &create,
        &base(),
        &json!({"body": {"name": "Rex", "tag": null}}),
    )
    .unwrap();
    assert_eq!(req.content_type.as_deref(), Some("application/json"));
    assert_eq!(req.body.unwrap(), br#"{"name":"Rex","tag":null}"#);
    assert_eq!(req.method, Method::Post);

    // The first supported type: XML is skipped for the form.
    let replace = spec.operation("replacePet").unwrap();
    let req = build_request(
        &replace,
        &base(),
        &json!({"petId": "1", "body": {"name": "R&x y", "tags": ["a", "b"]}}),
    )
    .unwrap();
    assert_eq!(
        req.content_type.as_deref(),
        Some("application/x-www-form-urlencoded")
    );
    assert_eq!(
        String::from_utf8(req.body.unwrap()).unwrap(),
        "name=R%26x+y&tags=a&tags=b"
    );

    let upload = spec.operation("uploadPhoto").unwrap();
    let req = build_request(
        &upload,
        &base(),
        &json!({"petId": 3, "body": {"caption": "hi", "meta": {"a": 1}}}),
    )
    .unwrap();
    let ct = req.content_type.unwrap();
    let boundary = ct.strip_prefix("multipart/form-data; boundary=").unwrap();
    let text = String::from_utf8(req.body.unwrap()).unwrap();
    assert_eq!(
        text,
        format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"caption\"\r\n\r\nhi\r\n\
             --{boundary}\r\nContent-Disposition: form-data; name=\"meta\"\r\nContent-Type: application/json\r\n\r\n{{\"a\":1}}\r\n\
             --{boundary}--\r\n"
        )
    );
    assert_eq!(req.url.path(), "/v1/pets/3/photo");

    let notes = spec.operation("put_pets_petId_notes").unwrap();
    let req = build_request(
        &notes,
        &base(),
        &json!({"petId": "1", "body": "plain words"}),
    )
    .unwrap();
    assert_eq!(req.content_type.as_deref(), Some("text/plain"));
    assert_eq!(req.body.unwrap(), b"plain words");
    let err = build_request(&replace, &base(), &json!({"petId": "1", "body": [1]})).unwrap_err();
    assert!(matches!(err, RequestError::BadArgument { .. }), "{err}");
}

#[test]
fn missing_and_unknown_arguments_are_named() {
    let spec = spec30();
    let create = spec.operation("createPet").unwrap();
    assert_eq!(
        build_request(&create, &base(), &json!({})),
        Err(RequestError::MissingRequired(vec!["body".to_owned()]))
    );
    let get = spec.operation("getPet").unwrap();
    let err = build_request(&get, &base(), &json!({"petid": "1"})).unwrap_err();
    assert_eq!(
        err,
        RequestError::UnknownArguments {
            unknown: vec!["petid".to_owned()],
            accepted: vec!["petId".to_owned()]
        }
    );
    assert!(err.to_string().contains("accepted: petId"));
    assert_eq!(
        build_request(&get, &base(), &json!({})),
        Err(RequestError::MissingRequired(vec!["petId".to_owned()]))
    );
    assert_eq!(
        build_request(&get, &base(), &json!([1])),
        Err(RequestError::NotAnObject("an array"))
    );
}

#[test]
fn header_values_cannot_split_the_request() {
    let spec = spec30();
    let op = spec.operation("listPets").unwrap();
    for evil in ["a\r\nX-Evil: 1", "a\nb", "a\0b", "a\rb"] {
        let err = build_request(&op, &base(), &json!({"X-Request-Id": evil})).unwrap_err();
        assert_eq!(
            err,
            RequestError::HeaderValue {
                name: "X-Request-Id".to_owned()
            }
        );
    }
    assert!(build_request(&op, &base(), &json!({"X-Request-Id": "é"})).is_err());
    // Cookies are percent-encoded, so CR/LF cannot reach the header.
    let req = build_request(&op, &base(), &json!({"session": "a\r\nb"})).unwrap();
    assert_eq!(
        req.headers,
        vec![("cookie".to_owned(), "session=a%0D%0Ab".to_owned())]
    );
}
