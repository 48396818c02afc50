//! The four CustomResourceDefinitions, generated from the types, with the labels Cluster
//! API needs on a provider's CRDs, and a check that their schemas are *structural* as the
//! API server requires (kube-rs and schemars can produce schemas it rejects or warns
//! about: `anyOf` with types, unknown formats, `$ref`…). `kk-capkk crds` prints them and
//! `config/crd/bases/` holds them; a unit test keeps the files equal to what the types
//! generate.

use super::{KKCluster, KKInstance, KKMachine, KKMachineTemplate};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool,
};
use kube::CustomResourceExt;

/// Cluster API finds the API version of a provider's kinds for its contract through this
/// label on their CRDs (`cluster.x-k8s.io/<contract>: <versions>`).
pub const CONTRACT_LABEL: (&str, &str) = ("cluster.x-k8s.io/v1beta1", "v1beta1");
/// clusterctl's provider label: the provider `kk` of type InfrastructureProvider.
pub const PROVIDER_LABEL: (&str, &str) = ("cluster.x-k8s.io/provider", "infrastructure-kk");
/// Where the CRD files live in the crate (`config/crd/bases/<group>_<plural>.yaml`).
pub const CRD_DIR: &str = "config/crd/bases";

/// The CRDs of KKCluster, KKMachine, KKMachineTemplate and KKInstance, labelled for
/// Cluster API and clusterctl.
pub fn crds() -> Vec<CustomResourceDefinition> {
    let mut all = vec![
        KKCluster::crd(),
        KKMachine::crd(),
        KKMachineTemplate::crd(),
        KKInstance::crd(),
    ];
    for crd in &mut all {
        let labels = crd.metadata.labels.get_or_insert_with(Default::default);
        for (k, v) in [CONTRACT_LABEL, PROVIDER_LABEL] {
            labels.insert(k.to_string(), v.to_string());
        }
    }
    all
}

/// Each CRD as `(file name, YAML)`, the file names kubebuilder would use
/// (`infrastructure.cluster.x-k8s.io_kkclusters.yaml`).
pub fn crd_files() -> Vec<(String, String)> {
    crds()
        .into_iter()
        .map(|crd| {
            let file = format!("{}_{}.yaml", crd.spec.group, crd.spec.names.plural);
            // Serializing a CRD value built in memory cannot fail (no maps with non-string
            // keys, no non-finite floats).
            let yaml = serde_yaml::to_string(&crd).unwrap_or_default();
            (file, format!("---\n{}", yaml))
        })
        .collect()
}

/// All four CRDs as one YAML stream, as `kk-capkk crds` prints it.
pub fn crds_yaml() -> String {
    crd_files().into_iter().map(|(_, y)| y).collect()
}

/// The formats an API server recognises (others draw an "unrecognized format" warning
/// and are not checked).
const KNOWN_FORMATS: &[&str] = &[
    "int32",
    "int64",
    "float",
    "double",
    "byte",
    "binary",
    "date",
    "date-time",
    "datetime",
    "duration",
    "password",
    "uri",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "cidr",
    "mac",
    "uuid",
    "uuid3",
    "uuid4",
    "uuid5",
    "isbn",
    "isbn10",
    "isbn13",
    "creditcard",
    "ssn",
    "hexcolor",
    "rgbcolor",
    "bsonobjectid",
];

/// What would make the API server reject or misread `crd`'s schemas: the rules of a
/// structural schema (a type on every node, nothing but value checks inside `allOf`,
/// `anyOf`, `oneOf`, `not`, items on arrays, no `$ref`, no `properties` beside
/// `additionalProperties`, only name/generateName under `metadata`), defaults that would be
/// pruned, formats it does not know, and a status subresource for a kind with a status.
/// Empty when the CRD is fine; each problem names the schema path.
pub fn structural_problems(crd: &CustomResourceDefinition) -> Vec<String> {
    let mut out = Vec::new();
    for v in &crd.spec.versions {
        let root = format!("{}/{}", crd.spec.names.kind, v.name);
        let Some(schema) = v
            .schema
            .as_ref()
            .and_then(|s| s.open_api_v3_schema.as_ref())
        else {
            out.push(format!("{}: no openAPIV3Schema", root));
            continue;
        };
        if schema.type_.as_deref() != Some("object") {
            out.push(format!("{}: the root must be of type object", root));
        }
        check_node(schema, &root, false, &mut out);
        if let Some(meta) = schema.properties.as_ref().and_then(|p| p.get("metadata")) {
            let extra: Vec<&String> = meta
                .properties
                .iter()
                .flatten()
                .map(|(k, _)| k)
                .filter(|k| *k != "name" && *k != "generateName")
                .collect();
            if !extra.is_empty() {
                out.push(format!(
                    "{}.metadata: only name and generateName may be specified, found {:?}",
                    root, extra
                ));
            }
        }
        let has_status = schema
            .properties
            .as_ref()
            .is_some_and(|p| p.contains_key("status"));
        let status_sub = v.subresources.as_ref().is_some_and(|s| s.status.is_some());
        if has_status && !status_sub {
            out.push(format!("{}: has a status but no status subresource", root));
        }
    }
    out
}

fn check_node(s: &JSONSchemaProps, path: &str, in_junctor: bool, out: &mut Vec<String>) {
    let mut problem = |msg: &str| out.push(format!("{}: {}", path, msg));
    let int_or_string = s.x_kubernetes_int_or_string == Some(true);
    let preserve = s.x_kubernetes_preserve_unknown_fields == Some(true);
    if in_junctor {
        // Inside allOf/anyOf/oneOf/not only value validations are allowed.
        for (set, name) in [
            (s.type_.is_some(), "type"),
            (s.default.is_some(), "default"),
            (s.additional_properties.is_some(), "additionalProperties"),
            (s.nullable.is_some(), "nullable"),
            (s.description.is_some(), "description"),
            (s.title.is_some(), "title"),
        ] {
            if set {
                problem(&format!("{} inside allOf/anyOf/oneOf/not", name));
            }
        }
    } else if s.type_.as_deref().is_none_or(str::is_empty) && !int_or_string && !preserve {
        problem("no type (a structural schema needs one on every node)");
    }
    if s.ref_path.is_some() || s.definitions.is_some() {
        problem("$ref/definitions are not allowed in a CRD");
    }
    if s.properties.is_some()
        && matches!(
            s.additional_properties,
            Some(JSONSchemaPropsOrBool::Schema(_))
        )
    {
        problem("properties and additionalProperties together");
    }
    if s.unique_items == Some(true) {
        problem("uniqueItems: true is not allowed");
    }
    if s.additional_items.is_some() {
        problem("additionalItems is not allowed");
    }
    if let Some(f) = &s.format {
        if !KNOWN_FORMATS.contains(&f.as_str()) {
            problem(&format!("format {:?} is unknown to the API server", f));
        }
    }
    if s.type_.as_deref() == Some("array") && !in_junctor {
        match &s.items {
            Some(JSONSchemaPropsOrArray::Schema(_)) => {}
            Some(JSONSchemaPropsOrArray::Schemas(_)) => {
                problem("items must be one schema, not a list")
            }
            None => problem("an array needs items"),
        }
    }
    if let Some(d) = &s.default {
        if let Some(p) = pruned_field(&d.0, s) {
            problem(&format!(
                "the default sets {}, which the schema does not have (it would be pruned)",
                p
            ));
        }
    }
    for (k, p) in s.properties.iter().flatten() {
        check_node(p, &format!("{}.{}", path, k), in_junctor, out);
    }
    if let Some(JSONSchemaPropsOrBool::Schema(a)) = &s.additional_properties {
        check_node(a, &format!("{}[*]", path), in_junctor, out);
    }
    if let Some(JSONSchemaPropsOrArray::Schema(i)) = &s.items {
        check_node(i, &format!("{}[]", path), in_junctor, out);
    }
    for (name, list) in [
        ("allOf", &s.all_of),
        ("anyOf", &s.any_of),
        ("oneOf", &s.one_of),
    ] {
        for (i, sub) in list.iter().flatten().enumerate() {
            check_node(sub, &format!("{}.{}[{}]", path, name, i), true, out);
        }
    }
    if let Some(n) = &s.not {
        check_node(n, &format!("{}.not", path), true, out);
    }
}

/// The first field of `value` the schema `s` would prune, if any.
fn pruned_field(value: &serde_json::Value, s: &JSONSchemaProps) -> Option<String> {
    if s.x_kubernetes_preserve_unknown_fields == Some(true) {
        return None;
    }
    match value {
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                let sub = match (&s.properties, &s.additional_properties) {
                    (Some(props), _) => props.get(k),
                    (None, Some(JSONSchemaPropsOrBool::Schema(a))) => Some(a.as_ref()),
                    _ => None,
                };
                match sub {
                    None => return Some(k.clone()),
                    Some(sub) => {
                        if let Some(inner) = pruned_field(v, sub) {
                            return Some(format!("{}.{}", k, inner));
                        }
                    }
                }
            }
            None
        }
        serde_json::Value::Array(items) => match &s.items {
            Some(JSONSchemaPropsOrArray::Schema(i)) => {
                items.iter().find_map(|v| pruned_field(v, i))
            }
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn crate_dir() -> &'static Path {
        Path::new(env!("CARGO_MANIFEST_DIR"))
    }

    #[test]
    fn every_schema_is_structural() {
        for crd in crds() {
            let problems = structural_problems(&crd);
            assert!(
                problems.is_empty(),
                "{}:\n  {}",
                crd.spec.names.kind,
                problems.join("\n  ")
            );
        }
    }

    #[test]
    fn the_checker_finds_what_the_api_server_rejects() {
        let mut crd = KKInstance::crd();
        let v = &mut crd.spec.versions[0];
        v.subresources = None;
        let root = v
            .schema
            .as_mut()
            .unwrap()
            .open_api_v3_schema
            .as_mut()
            .unwrap();
        let spec = root.properties.as_mut().unwrap().get_mut("spec").unwrap();
        let props = spec.properties.as_mut().unwrap();
        props.get_mut("address").unwrap().type_ = None;
        props.get_mut("arch").unwrap().format = Some("uint16".into());
        props.get_mut("name").unwrap().any_of = Some(vec![JSONSchemaProps {
            type_: Some("string".into()),
            ..Default::default()
        }]);
        props.get_mut("roles").unwrap().items = None;
        props.get_mut("auth").unwrap().default = Some(
            k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSON(
                serde_json::json!({"user": "root", "sshKey": "x"}),
            ),
        );
        let problems = structural_problems(&crd).join("\n");
        for expected in [
            "KKInstance/v1beta1.spec.address: no type",
            "spec.arch: format \"uint16\" is unknown",
            "spec.name.anyOf[0]: type inside allOf/anyOf/oneOf/not",
            "spec.roles: an array needs items",
            "spec.auth: the default sets sshKey",
            "has a status but no status subresource",
        ] {
            assert!(
                problems.contains(expected),
                "{expected:?} not in:\n{problems}"
            );
        }
    }

    #[test]
    fn crds_carry_the_cluster_api_labels_and_status_subresources() {
        for crd in crds() {
            let labels = crd.metadata.labels.clone().unwrap_or_default();
            assert_eq!(
                labels.get("cluster.x-k8s.io/v1beta1").map(String::as_str),
                Some("v1beta1")
            );
            assert_eq!(
                labels.get("cluster.x-k8s.io/provider").map(String::as_str),
                Some("infrastructure-kk")
            );
            let v = &crd.spec.versions[0];
            let with_status = crd.spec.names.kind != "KKMachineTemplate";
            assert_eq!(
                v.subresources.as_ref().is_some_and(|s| s.status.is_some()),
                with_status,
                "{}",
                crd.spec.names.kind
            );
        }
    }

    /// The committed files are what the types generate: change a type, then run
    /// `cargo run -p kk-capkk -- crds --out-dir crates/capkk/config/crd/bases`.
    #[test]
    fn committed_crds_match_the_types() {
        let dir = crate_dir().join(CRD_DIR);
        let mut stale = Vec::new();
        for (file, yaml) in crd_files() {
            let path = dir.join(&file);
            match std::fs::read_to_string(&path) {
                Ok(text) if text == yaml => {}
                Ok(_) => stale.push(format!("{} differs", path.display())),
                Err(e) => stale.push(format!("{}: {}", path.display(), e)),
            }
        }
        assert!(
            stale.is_empty(),
            "the committed CRDs are not what the types generate:\n  {}\nregenerate them: cargo run -p kk-capkk -- crds --out-dir crates/capkk/{}",
            stale.join("\n  "),
            CRD_DIR
        );
    }

    #[test]
    fn the_crds_round_trip_through_yaml() {
        for (file, yaml) in crd_files() {
            let back: CustomResourceDefinition =
                serde_yaml::from_str(yaml.trim_start_matches("---\n"))
                    .unwrap_or_else(|e| panic!("{file}: {e}"));
            assert!(structural_problems(&back).is_empty(), "{file}");
        }
    }
}
