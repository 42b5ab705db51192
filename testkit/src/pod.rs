//! A chart's Deployment run as a kubelet would run its Pod, for clusters that have no
//! kubelet: its first container's program with the container's arguments and environment
//! (`fieldRef` and `secretKeyRef` resolved), its service account's token where in-cluster
//! clients look for it, its volumes (`emptyDir`, `secret`, `configMap`) at their mount
//! paths, and, with `readOnlyRootFilesystem`, nothing else writable.
//!
//! The process runs in a mount namespace of its own (`unshare`), chrooted into an overlay
//! of the host's root that is remounted read-only once the volumes are mounted on it: a
//! write anywhere but a declared volume fails with "Read-only file system", as it would in
//! the Pod. The network is the host's, so the API servers on loopback are reached through
//! `KUBERNETES_SERVICE_HOST=127.0.0.1`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use serde_json::Value;

use crate::real_k8s::{launch, RealCluster};

/// A Deployment's Pod running as a process; killed when dropped.
pub struct PodProcess {
    child: Child,
    log: PathBuf,
}

impl PodProcess {
    /// Runs the first container of `deployment` (a rendered manifest) in `cluster`, its
    /// image's entrypoint being `program` with the image's environment `image_env`, keeping
    /// its volumes and log under `dir`.
    pub async fn start(
        deployment: &Value,
        program: &Path,
        image_env: &[(&str, &str)],
        cluster: &RealCluster,
        dir: &Path,
    ) -> Self {
        let name = deployment["metadata"]["name"]
            .as_str()
            .unwrap_or_else(|| panic!("a Deployment without a name"));
        let namespace = deployment["metadata"]["namespace"]
            .as_str()
            .unwrap_or("default");
        let spec = &deployment["spec"]["template"]["spec"];
        let container = &spec["containers"][0];
        let pod = dir.join(name);
        std::fs::create_dir_all(&pod).unwrap_or_else(|e| panic!("{}: {e}", pod.display()));
        let pod_name = format!("{name}-0");

        let mut env: Vec<(String, String)> = image_env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let port = cluster.url().rsplit(':').next().unwrap_or("443");
        env.push(("KUBERNETES_SERVICE_HOST".into(), "127.0.0.1".into()));
        env.push(("KUBERNETES_SERVICE_PORT".into(), port.into()));
        env.push(("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into()));
        for variable in container["env"].as_array().into_iter().flatten() {
            let key = text(&variable["name"]);
            let value = match (&variable["value"], &variable["valueFrom"]) {
                (Value::String(value), _) => value.clone(),
                (_, from) if from["fieldRef"]["fieldPath"] == "metadata.name" => pod_name.clone(),
                (_, from) if from["fieldRef"]["fieldPath"] == "metadata.namespace" => {
                    namespace.to_string()
                }
                (_, from) if from.get("secretKeyRef").is_some() => {
                    let reference = &from["secretKeyRef"];
                    let data = secret_data(cluster, namespace, &text(&reference["name"])).await;
                    let key = text(&reference["key"]);
                    String::from_utf8_lossy(data.get(&key).map_or(&[][..], |v| v)).into_owned()
                }
                (value, from) => panic!("env {key}: {value} {from} is not supported here"),
            };
            env.push((key, value));
        }

        // The service account token, as the kubelet projects it.
        let mut mounts: Vec<(PathBuf, String, bool)> = Vec::new();
        if let Some(account) = spec["serviceAccountName"].as_str() {
            let token = cluster.account_token(namespace, account).await;
            let files = pod.join("serviceaccount");
            write_files(
                &files,
                &[
                    ("token", token.into_bytes()),
                    ("ca.crt", cluster.ca_pem().as_bytes().to_vec()),
                    ("namespace", namespace.as_bytes().to_vec()),
                ],
            );
            // /var/run is a link to /run, which must not be followed out of the new root.
            mounts.push((
                files,
                "/run/secrets/kubernetes.io/serviceaccount".into(),
                true,
            ));
        }
        for mount in container["volumeMounts"].as_array().into_iter().flatten() {
            let volume_name = text(&mount["name"]);
            let volume = spec["volumes"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|v| v["name"] == volume_name.as_str())
                .unwrap_or_else(|| panic!("volume {volume_name} is not declared"));
            let source = pod.join("volumes").join(&volume_name);
            if !source.exists() {
                let files = volume_files(volume, cluster, namespace).await;
                let borrowed: Vec<(&str, Vec<u8>)> =
                    files.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
                write_files(&source, &borrowed);
            }
            let read_only = mount["readOnly"] == true
                || volume.get("secret").is_some()
                || volume.get("configMap").is_some();
            mounts.push((source, text(&mount["mountPath"]), read_only));
        }
        let read_only_root = container["securityContext"]["readOnlyRootFilesystem"] == true;
        let mut argv: Vec<String> = vec![program.display().to_string()];
        argv.extend(container["args"].as_array().into_iter().flatten().map(text));
        let script = sandbox_script(&pod, &mounts, read_only_root, &env, &argv);
        let child = launch(
            &pod,
            "pod",
            Command::new("unshare").args([
                "--mount",
                "--propagation",
                "private",
                "sh",
                "-c",
                &script,
            ]),
        );
        Self {
            child,
            log: pod.join("pod.log"),
        }
    }

    /// What the process wrote to its standard output and error.
    pub fn logs(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Whether the process has exited.
    pub fn exited(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(Some(_)))
    }
}

impl Drop for PodProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn text(value: &Value) -> String {
    value.as_str().unwrap_or_default().to_string()
}

async fn secret_data(
    cluster: &RealCluster,
    namespace: &str,
    name: &str,
) -> std::collections::BTreeMap<String, Vec<u8>> {
    let secrets: kube::Api<Secret> = kube::Api::namespaced(cluster.client().await, namespace);
    let secret = secrets
        .get(name)
        .await
        .unwrap_or_else(|e| panic!("Secret {namespace}/{name}: {e}"));
    secret
        .data
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| (k, v.0))
        .collect()
}

/// The files a volume holds: none for an `emptyDir`, a Secret's or ConfigMap's keys.
async fn volume_files(
    volume: &Value,
    cluster: &RealCluster,
    namespace: &str,
) -> Vec<(String, Vec<u8>)> {
    if let Some(secret) = volume.get("secret") {
        return secret_data(cluster, namespace, &text(&secret["secretName"]))
            .await
            .into_iter()
            .collect();
    }
    if let Some(config_map) = volume.get("configMap") {
        let name = text(&config_map["name"]);
        let maps: kube::Api<ConfigMap> = kube::Api::namespaced(cluster.client().await, namespace);
        let found = maps
            .get(&name)
            .await
            .unwrap_or_else(|e| panic!("ConfigMap {namespace}/{name}: {e}"));
        let binary = found.binary_data.unwrap_or_default();
        return found
            .data
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| (k, v.into_bytes()))
            .chain(binary.into_iter().map(|(k, v)| (k, v.0)))
            .collect();
    }
    if volume.get("emptyDir").is_some() || volume.get("persistentVolumeClaim").is_some() {
        return Vec::new();
    }
    panic!("volume {volume} is not supported here")
}

fn write_files(dir: &Path, files: &[(&str, Vec<u8>)]) {
    std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for (name, bytes) in files {
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
}

/// The shell script that builds the Pod's filesystem in the new mount namespace and runs
/// the program in it.
fn sandbox_script(
    pod: &Path,
    mounts: &[(PathBuf, String, bool)],
    read_only_root: bool,
    env: &[(String, String)],
    argv: &[String],
) -> String {
    let quote = |s: &str| format!("'{}'", s.replace('\'', r"'\''"));
    let root = pod.join("root");
    let layer = pod.join("layer");
    let (root_q, layer_q) = (
        quote(&root.display().to_string()),
        quote(&layer.display().to_string()),
    );
    let mut script = format!(
        "set -e\nmkdir -p {root_q} {layer_q}\nmount -t tmpfs tmpfs {layer_q}\n\
         mkdir {layer_q}/upper {layer_q}/work\n\
         mount -t overlay overlay -o lowerdir=/,upperdir={layer_q}/upper,workdir={layer_q}/work {root_q}\n\
         mount --rbind /dev {root_q}/dev\nmount -t proc proc {root_q}/proc\n"
    );
    for (source, target, read_only) in mounts {
        assert!(
            !target.starts_with("/var/run/"),
            "{target}: /var/run is a link, mount under /run"
        );
        let source = quote(&source.display().to_string());
        let target = quote(&format!("{}{target}", root.display()));
        script.push_str(&format!(
            "mkdir -p {target}\nmount --bind {source} {target}\n"
        ));
        if *read_only {
            script.push_str(&format!("mount -o remount,bind,ro {target}\n"));
        }
    }
    if read_only_root {
        script.push_str(&format!("mount -o remount,ro {root_q}\n"));
    }
    let env: Vec<String> = env
        .iter()
        .map(|(k, v)| quote(&format!("{k}={v}")))
        .collect();
    let argv: Vec<String> = argv.iter().map(|a| quote(a)).collect();
    script.push_str(&format!(
        "cd /\nexec chroot {root_q} env -i {} {}\n",
        env.join(" "),
        argv.join(" ")
    ));
    script
}
