//! Environment references in config values: `${VAR}`, `${VAR:-default}`, and a whole value
//! written `env:VAR`. They keep secrets out of config files; they are expanded from our own
//! environment when the config is loaded, in `env`, `args`, `url` and `headers`.

/// Expands the references in `value` with `lookup`. A reference to an unset variable without
/// a default is an error naming the variable; `$$` is a literal `$`.
use super::error::ExpandError;

pub fn expand(value: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, ExpandError> {
    if let Some(var) = value.strip_prefix("env:")
        && is_name(var)
    {
        return lookup(var).ok_or_else(|| ExpandError::Unset(var.to_string()));
    }
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
            continue;
        }
        let Some(body) = after.strip_prefix('{') else {
            out.push('$');
            rest = after;
            continue;
        };
        let Some(end) = body.find('}') else {
            return Err(ExpandError::Unclosed(value.to_string()));
        };
        let inner = &body[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((n, d)) => (n, Some(d)),
            None => (inner, None),
        };
        if !is_name(name) {
            return Err(ExpandError::NotReference(inner.to_string()));
        }
        match (
            lookup(name).filter(|v| !v.is_empty() || default.is_none()),
            default,
        ) {
            (Some(v), _) => out.push_str(&v),
            (None, Some(d)) => out.push_str(d),
            (None, None) => return Err(ExpandError::Unset(name.to_string())),
        }
        rest = &body[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

fn is_name(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with(|c: char| c.is_ascii_digit())
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "TOKEN" => Some("s3cret".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn expansion_table() {
        let cases: &[(&str, Result<&str, &str>)] = &[
            ("plain", Ok("plain")),
            ("Bearer ${TOKEN}", Ok("Bearer s3cret")),
            ("${TOKEN}${TOKEN}", Ok("s3crets3cret")),
            ("${MISSING:-fallback}", Ok("fallback")),
            ("${EMPTY:-fallback}", Ok("fallback")),
            ("${EMPTY}", Ok("")),
            ("${TOKEN:-x}", Ok("s3cret")),
            ("env:TOKEN", Ok("s3cret")),
            ("env:not a name", Ok("env:not a name")),
            ("cost: $5 and $$HOME", Ok("cost: $5 and $HOME")),
            ("${MISSING}", Err("environment variable MISSING is not set")),
            (
                "env:MISSING",
                Err("environment variable MISSING is not set"),
            ),
            ("${TOKEN", Err("unclosed ${ in \"${TOKEN\"")),
            ("${1BAD}", Err("\"${1BAD}\" is not a variable reference")),
        ];
        for (input, want) in cases {
            let got = expand(input, &env).map_err(|e| e.to_string());
            assert_eq!(got.as_deref().map_err(String::as_str), *want, "{input}");
        }
    }
}
