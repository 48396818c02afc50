//! The `url` lookup: the body of an HTTP(S) GET from the controller, split into lines
//! unless `split_lines=False`.

use minijinja::value::Kwargs;
use minijinja::{Error, Value};

use super::term_str;
use crate::template::filters::{fail, py_str};

fn flag(v: Option<Value>, default: bool) -> bool {
    match v {
        None => default,
        Some(v) if v.as_str().is_some() => matches!(
            py_str(&v).to_ascii_lowercase().as_str(),
            "true" | "yes" | "1" | "on" | "y"
        ),
        Some(v) => v.is_true(),
    }
}

pub(super) fn url(terms: &[Value], kwargs: &Kwargs) -> Result<Vec<Value>, Error> {
    let validate = flag(kwargs.get::<Option<Value>>("validate_certs")?, true);
    let split = flag(kwargs.get::<Option<Value>>("split_lines")?, true);
    let timeout = match kwargs.get::<Option<Value>>("timeout")? {
        None => 10.0,
        Some(v) => py_str(&v)
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|t| t.is_finite() && *t > 0.0)
            .ok_or_else(|| {
                fail(format!(
                    "lookup('url'): timeout must be a number, got {}",
                    v
                ))
            })?,
    };
    let user = kwargs.get::<Option<String>>("username")?;
    let pass = kwargs.get::<Option<String>>("password")?;
    let mut headers: Vec<(String, String)> = Vec::new();
    if let Some(h) = kwargs.get::<Option<Value>>("headers")? {
        for k in h.try_iter()? {
            headers.push((py_str(&k), py_str(&h.get_item(&k)?)));
        }
    }
    let urls = terms
        .iter()
        .map(|t| term_str("url", t))
        .collect::<Result<Vec<_>, _>>()?;
    // A runtime of its own on a thread of its own: the lookup is called from synchronous
    // template code, which may itself run on the engine's runtime.
    let fetched = std::thread::spawn(move || -> Result<Vec<String>, String> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        let client = reqwest::Client::builder()
            .danger_accept_invalid_certs(!validate)
            .timeout(std::time::Duration::from_secs_f64(timeout))
            .build()
            .map_err(|e| format!("cannot set up the HTTP client: {}", e))?;
        rt.block_on(async {
            let mut bodies = Vec::new();
            for u in &urls {
                let mut req = client.get(u);
                for (k, v) in &headers {
                    req = req.header(k, v);
                }
                if let Some(user) = &user {
                    req = req.basic_auth(user, pass.as_ref());
                }
                let resp = req
                    .send()
                    .await
                    .map_err(|e| format!("Failed lookup url for {} : {}", u, e))?;
                let status = resp.status();
                if !status.is_success() {
                    return Err(format!(
                        "Received HTTP error for {} : HTTP Error {}: {}",
                        u,
                        status.as_u16(),
                        status.canonical_reason().unwrap_or("")
                    ));
                }
                let body = resp
                    .text()
                    .await
                    .map_err(|e| format!("Failed lookup url for {} : {}", u, e))?;
                bodies.push(body);
            }
            Ok(bodies)
        })
    })
    .join()
    .map_err(|_| fail("lookup('url'): the request thread panicked"))?
    .map_err(|e| fail(format!("lookup('url'): {}", e)))?;
    let mut out = Vec::new();
    for body in fetched {
        if split {
            out.extend(body.lines().map(Value::from));
        } else {
            out.push(Value::from(body));
        }
    }
    Ok(out)
}
