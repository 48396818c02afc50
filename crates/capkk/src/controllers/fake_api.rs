//! FAKE Kubernetes API server. Compiled for the controller tests (`cfg(test)`) and, with
//! the cargo feature `fake-api` (off by default), for the workspace's end-to-end test
//! tests/capkk_cluster.rs, which runs the real controllers against real test hosts with
//! this fake in place of kube-apiserver. The feature exists for that test only: the
//! product (`kk-capkk run`) always talks to a real API server.
//!
//! It stands in for kube-apiserver, which cannot run on these machines: a tower `Service`
//! behind `kube::Client::new(fake, "default")` that keeps objects in memory as JSON and
//! answers what the controllers use, for any resource path: get, list (label selectors
//! `k=v`, `k!=v`, `k`, `!k`), watch (from a resourceVersion, with replay), create,
//! replace, patch (JSON merge patch; server-side apply and strategic merge patches are
//! applied as merge patches, a simplification), delete. It keeps the API server's rules
//! the controllers depend on: resourceVersion bumps and merge-patch conflicts (409),
//! AlreadyExists (409) and NotFound (404) as `Status` bodies, the status subresource of
//! Cluster API kinds (groups `*.x-k8s.io`: main writes keep the status, status writes
//! only change it), and deletion with finalizers (deletionTimestamp set, the object goes
//! when its last finalizer is removed). What it does not do: garbage collection of
//! dependents, admission (defaulting, validation), field selectors, pagination.
//! Every write is logged so tests can assert that a re-reconcile wrote nothing; reads of
//! one object are logged too, so a test knows a reconcile of it has begun.

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use tokio::sync::broadcast;

type Body = UnsyncBoxBody<Bytes, Infallible>;
/// (resource path such as `apis/infrastructure.cluster.x-k8s.io/v1beta1/kkmachines`,
/// namespace, name)
type Key = (String, String, String);

#[derive(Clone, Debug)]
struct WatchEvent {
    rv: u64,
    res: String,
    ns: String,
    type_: &'static str,
    object: Value,
}

#[derive(Default)]
struct Store {
    objects: BTreeMap<Key, Value>,
    rv: u64,
    uid: u64,
    writes: Vec<String>,
    reads: Vec<String>,
    history: Vec<WatchEvent>,
}

/// The fake API server; clone it to keep a handle for assertions.
#[derive(Clone)]
pub struct FakeApi {
    store: Arc<Mutex<Store>>,
    tx: broadcast::Sender<WatchEvent>,
}

/// A parsed request path.
struct Target {
    res: String,
    ns: Option<String>,
    name: Option<String>,
    status: bool,
}

fn parse_path(path: &str) -> Option<Target> {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (prefix, rest) = match *segs.first()? {
        "api" if segs.len() >= 2 => (segs[..2].join("/"), &segs[2..]),
        "apis" if segs.len() >= 3 => (segs[..3].join("/"), &segs[3..]),
        _ => return None,
    };
    let (ns, rest) = match rest {
        ["namespaces", ns, rest @ ..] if !rest.is_empty() => (Some(ns.to_string()), rest),
        _ => (None, rest),
    };
    let (resource, name, sub) = match rest {
        [r] => (r, None, None),
        [r, n] => (r, Some(n.to_string()), None),
        [r, n, s] => (r, Some(n.to_string()), Some(*s)),
        _ => return None,
    };
    Some(Target {
        res: format!("{prefix}/{resource}"),
        ns,
        name,
        status: sub == Some("status"),
    })
}

fn status_subresource(res: &str) -> bool {
    res.split('/')
        .nth(1)
        .is_some_and(|g| res.starts_with("apis/") && g.ends_with("x-k8s.io"))
}

/// RFC 7386 JSON merge patch.
fn merge(target: &mut Value, patch: &Value) {
    match (target, patch) {
        (Value::Object(t), Value::Object(p)) => {
            for (k, v) in p {
                if v.is_null() {
                    t.remove(k);
                } else {
                    merge(t.entry(k.clone()).or_insert(Value::Null), v);
                }
            }
        }
        (t, p) => {
            let mut p = p.clone();
            if let Value::Object(m) = &mut p {
                m.retain(|_, v| !v.is_null());
            }
            *t = p;
        }
    }
}

fn selector_matches(selector: &str, obj: &Value) -> Result<bool, String> {
    let labels = &obj["metadata"]["labels"];
    for term in selector.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        let ok = if let Some((k, v)) = term.split_once("!=") {
            labels[k.trim()].as_str() != Some(v.trim())
        } else if let Some((k, v)) = term.split_once('=') {
            labels[k.trim().trim_end_matches('=')].as_str() == Some(v.trim())
        } else if let Some(k) = term.strip_prefix('!') {
            labels.get(k).is_none()
        } else if term.contains(' ') {
            return Err(format!(
                "set-based selector {term:?} not supported by the fake"
            ));
        } else {
            labels.get(term).is_some()
        };
        if !ok {
            return Ok(false);
        }
    }
    Ok(true)
}

fn full(status: StatusCode, v: &Value) -> Response<Body> {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(v.to_string())).boxed_unsync())
        .expect("a static response builds")
}

fn failure(code: u16, reason: &str, message: String) -> Response<Body> {
    full(
        StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": message, "reason": reason, "code": code}),
    )
}

fn query_map(q: Option<&str>) -> BTreeMap<String, String> {
    q.unwrap_or("")
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), percent_decode(v)))
        .collect()
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = b
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (b[i], hex) {
            (b'%', Some(v)) => {
                out.push(v);
                i += 3;
            }
            (b'+', _) => {
                out.push(b' ');
                i += 1;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl Default for FakeApi {
    fn default() -> Self {
        Self::new()
    }
}

impl FakeApi {
    /// An empty API server.
    pub fn new() -> Self {
        let (tx, _) = broadcast::channel(4096);
        FakeApi {
            store: Arc::default(),
            tx,
        }
    }

    /// A kube client talking to this fake.
    pub fn client(&self) -> kube::Client {
        let me = self.clone();
        let svc = tower::service_fn(move |req: Request<kube::client::Body>| {
            let me = me.clone();
            async move { Ok::<_, Infallible>(me.handle(req).await) }
        });
        kube::Client::new(svc, "default")
    }

    /// Every write so far, as `VERB resource/namespace/name[/status]`.
    pub fn writes(&self) -> Vec<String> {
        self.lock().writes.clone()
    }

    /// Every read of one object so far, as `GET resource/namespace/name`.
    pub fn reads(&self) -> Vec<String> {
        self.lock().reads.clone()
    }

    /// What the watches of `resource` (the plural) reported so far, in order: the event
    /// type (`ADDED`, `MODIFIED`, `DELETED`) and the object as it was then.
    pub fn history(&self, resource: &str) -> Vec<(String, Value)> {
        self.lock()
            .history
            .iter()
            .filter(|e| e.res.rsplit('/').next() == Some(resource))
            .map(|e| (e.type_.to_string(), e.object.clone()))
            .collect()
    }

    /// The stored objects of `resource` (the plural, e.g. `kkinstances`), all namespaces.
    pub fn objects(&self, resource: &str) -> Vec<Value> {
        self.lock()
            .objects
            .iter()
            .filter(|((res, _, _), _)| res.rsplit('/').next() == Some(resource))
            .map(|(_, v)| v.clone())
            .collect()
    }

    /// Everything stored, as one JSON text (for "this secret appears nowhere" checks).
    pub fn dump(&self) -> String {
        let s = self.lock();
        s.objects
            .values()
            .map(Value::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Store> {
        self.store.lock().unwrap_or_else(|e| e.into_inner())
    }

    async fn handle(&self, req: Request<kube::client::Body>) -> Response<Body> {
        let (parts, body) = req.into_parts();
        let body = match body.collect().await {
            Ok(b) => b.to_bytes(),
            Err(e) => return failure(400, "BadRequest", format!("reading the body: {e}")),
        };
        let Some(t) = parse_path(parts.uri.path()) else {
            return failure(
                404,
                "NotFound",
                format!("the fake has no route for {}", parts.uri.path()),
            );
        };
        let q = query_map(parts.uri.query());
        let ctype = parts
            .headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let writes = [Method::POST, Method::PATCH, Method::PUT].contains(&parts.method);
        let v: Value = match serde_json::from_slice(&body) {
            Ok(v) => v,
            Err(_) if !writes => Value::Null,
            Err(e) => return failure(400, "BadRequest", format!("body is not JSON: {e}")),
        };
        match (parts.method.clone(), &t.name) {
            (Method::GET, None) if q.get("watch").is_some_and(|w| w == "true" || w == "1") => {
                self.watch(&t, &q)
            }
            (Method::GET, None) => self.list(&t, &q),
            (Method::GET, Some(name)) => self.get(&t, name),
            (Method::POST, None) => self.create(&t, v),
            (Method::PATCH, Some(name)) => {
                if ctype.starts_with("application/json-patch") {
                    return failure(
                        415,
                        "UnsupportedMediaType",
                        "the fake applies merge patches only".into(),
                    );
                }
                let rv = v["metadata"]["resourceVersion"]
                    .as_str()
                    .map(str::to_string);
                self.write(
                    &t,
                    name,
                    |obj| {
                        merge(obj, &v);
                        Ok(())
                    },
                    rv,
                )
            }
            (Method::PUT, Some(name)) => {
                let rv = v["metadata"]["resourceVersion"]
                    .as_str()
                    .map(str::to_string);
                self.write(
                    &t,
                    name,
                    |obj| {
                        *obj = v.clone();
                        Ok(())
                    },
                    rv,
                )
            }
            (Method::DELETE, Some(name)) => self.delete(&t, name),
            (m, _) => failure(
                405,
                "MethodNotAllowed",
                format!("the fake does not serve {m} {}", parts.uri.path()),
            ),
        }
    }

    fn get(&self, t: &Target, name: &str) -> Response<Body> {
        let key = (
            t.res.clone(),
            t.ns.clone().unwrap_or_default(),
            name.to_string(),
        );
        let mut s = self.lock();
        s.reads.push(format!("GET {}/{}/{name}", t.res, key.1));
        match s.objects.get(&key) {
            Some(v) => full(StatusCode::OK, v),
            None => not_found(t, name),
        }
    }

    fn list(&self, t: &Target, q: &BTreeMap<String, String>) -> Response<Body> {
        let s = self.lock();
        let selector = q.get("labelSelector").cloned().unwrap_or_default();
        let mut items = Vec::new();
        for ((res, ns, _), v) in &s.objects {
            if *res != t.res || t.ns.as_ref().is_some_and(|n| n != ns) {
                continue;
            }
            match selector_matches(&selector, v) {
                Ok(true) => items.push(v.clone()),
                Ok(false) => {}
                Err(e) => return failure(400, "BadRequest", e),
            }
        }
        let kind = items
            .first()
            .and_then(|i| i["kind"].as_str())
            .map(|k| format!("{k}List"))
            .unwrap_or_else(|| "List".into());
        full(
            StatusCode::OK,
            &json!({"apiVersion": "v1", "kind": kind,
                    "metadata": {"resourceVersion": s.rv.to_string()}, "items": items}),
        )
    }

    fn watch(&self, t: &Target, q: &BTreeMap<String, String>) -> Response<Body> {
        let from: u64 = q
            .get("resourceVersion")
            .and_then(|r| r.parse().ok())
            .unwrap_or(0);
        let selector = q.get("labelSelector").cloned().unwrap_or_default();
        let (res, ns) = (t.res.clone(), t.ns.clone());
        let wanted = move |e: &WatchEvent| {
            e.res == res
                && ns.as_ref().is_none_or(|n| *n == e.ns)
                && e.rv > from
                && selector_matches(&selector, &e.object).unwrap_or(false)
        };
        let s = self.lock();
        let rx = self.tx.subscribe();
        let backlog: Vec<WatchEvent> = s.history.iter().filter(|e| wanted(e)).cloned().collect();
        drop(s);
        let line = |e: &WatchEvent| {
            Ok::<_, Infallible>(http_body::Frame::data(Bytes::from(format!(
                "{}\n",
                json!({"type": e.type_, "object": e.object})
            ))))
        };
        let backlog = futures::stream::iter(backlog.iter().map(line).collect::<Vec<_>>());
        let live = futures::stream::unfold((rx, wanted), move |(mut rx, wanted)| async move {
            loop {
                match rx.recv().await {
                    Ok(e) if wanted(&e) => return Some((line(&e), (rx, wanted))),
                    Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(broadcast::error::RecvError::Closed) => return None,
                }
            }
        });
        use futures::StreamExt;
        Response::builder()
            .status(StatusCode::OK)
            .header("content-type", "application/json")
            .body(StreamBody::new(backlog.chain(live)).boxed_unsync())
            .expect("a watch response builds")
    }

    fn create(&self, t: &Target, mut v: Value) -> Response<Body> {
        let Some(ns) = t.ns.clone() else {
            return failure(
                400,
                "BadRequest",
                "the fake serves namespaced creates only".into(),
            );
        };
        let Some(name) = v["metadata"]["name"].as_str().map(str::to_string) else {
            return failure(422, "Invalid", "metadata.name: Required value".into());
        };
        let mut s = self.lock();
        let key = (t.res.clone(), ns.clone(), name.clone());
        if s.objects.contains_key(&key) {
            return failure(
                409,
                "AlreadyExists",
                format!("{} \"{name}\" already exists", t.res),
            );
        }
        s.uid += 1;
        s.rv += 1;
        let meta = &mut v["metadata"];
        meta["namespace"] = json!(ns);
        meta["uid"] = json!(format!("uid-{}", s.uid));
        meta["resourceVersion"] = json!(s.rv.to_string());
        meta["creationTimestamp"] = json!("2026-01-01T00:00:00Z");
        if status_subresource(&t.res) {
            if let Some(m) = v.as_object_mut() {
                m.remove("status");
            }
        }
        s.writes.push(format!("POST {}/{ns}/{name}", t.res));
        self.record(&mut s, &key, "ADDED", &v);
        s.objects.insert(key, v.clone());
        full(StatusCode::CREATED, &v)
    }

    /// Applies `change` to the stored object under the status-subresource and finalizer
    /// rules; `expected_rv` is the resourceVersion the client read, checked when given.
    fn write(
        &self,
        t: &Target,
        name: &str,
        change: impl FnOnce(&mut Value) -> Result<(), String>,
        expected_rv: Option<String>,
    ) -> Response<Body> {
        let mut s = self.lock();
        let key = (
            t.res.clone(),
            t.ns.clone().unwrap_or_default(),
            name.to_string(),
        );
        let Some(old) = s.objects.get(&key).cloned() else {
            return not_found(t, name);
        };
        let current_rv = old["metadata"]["resourceVersion"]
            .as_str()
            .unwrap_or("")
            .to_string();
        if let Some(rv) = expected_rv.filter(|rv| *rv != current_rv) {
            return failure(409, "Conflict", format!(
                "Operation cannot be fulfilled on {} \"{name}\": the object has been modified (read {rv}, now {current_rv})",
                t.res
            ));
        }
        let mut new = old.clone();
        if let Err(e) = change(&mut new) {
            return failure(422, "Invalid", e);
        }
        if status_subresource(&t.res) {
            if t.status {
                let status = new.get("status").cloned();
                new = old.clone();
                match status {
                    Some(st) => new["status"] = st,
                    None => {
                        new.as_object_mut().map(|m| m.remove("status"));
                    }
                }
            } else {
                match old.get("status") {
                    Some(st) => new["status"] = st.clone(),
                    None => {
                        new.as_object_mut().map(|m| m.remove("status"));
                    }
                }
            }
        }
        // Identity fields are the server's.
        for f in [
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "namespace",
            "name",
        ] {
            match old["metadata"].get(f) {
                Some(v) => new["metadata"][f] = v.clone(),
                None => {
                    new["metadata"].as_object_mut().map(|m| m.remove(f));
                }
            }
        }
        new["metadata"]["resourceVersion"] = json!(current_rv);
        if new == old {
            return full(StatusCode::OK, &new);
        }
        s.rv += 1;
        new["metadata"]["resourceVersion"] = json!(s.rv.to_string());
        let verb = if t.status { "PATCH-STATUS" } else { "PATCH" };
        s.writes.push(format!("{verb} {}/{}/{name}", t.res, key.1));
        let gone = new["metadata"].get("deletionTimestamp").is_some()
            && new["metadata"]["finalizers"]
                .as_array()
                .is_none_or(|f| f.is_empty());
        if gone {
            self.record(&mut s, &key, "DELETED", &new);
            s.objects.remove(&key);
        } else {
            self.record(&mut s, &key, "MODIFIED", &new);
            s.objects.insert(key, new.clone());
        }
        full(StatusCode::OK, &new)
    }

    fn delete(&self, t: &Target, name: &str) -> Response<Body> {
        let mut s = self.lock();
        let key = (
            t.res.clone(),
            t.ns.clone().unwrap_or_default(),
            name.to_string(),
        );
        let Some(mut obj) = s.objects.get(&key).cloned() else {
            return not_found(t, name);
        };
        s.writes.push(format!("DELETE {}/{}/{name}", t.res, key.1));
        let has_finalizers = obj["metadata"]["finalizers"]
            .as_array()
            .is_some_and(|f| !f.is_empty());
        if has_finalizers {
            if obj["metadata"].get("deletionTimestamp").is_none() {
                s.rv += 1;
                obj["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:01Z");
                obj["metadata"]["resourceVersion"] = json!(s.rv.to_string());
                self.record(&mut s, &key, "MODIFIED", &obj);
                s.objects.insert(key, obj.clone());
            }
        } else {
            s.rv += 1;
            self.record(&mut s, &key, "DELETED", &obj);
            s.objects.remove(&key);
        }
        full(StatusCode::OK, &obj)
    }

    fn record(&self, s: &mut Store, key: &Key, type_: &'static str, obj: &Value) {
        let e = WatchEvent {
            rv: s.rv,
            res: key.0.clone(),
            ns: key.1.clone(),
            type_,
            object: obj.clone(),
        };
        s.history.push(e.clone());
        let _ = self.tx.send(e);
    }
}

fn not_found(t: &Target, name: &str) -> Response<Body> {
    let resource = t.res.rsplit('/').next().unwrap_or("");
    failure(404, "NotFound", format!("{resource} \"{name}\" not found"))
}
