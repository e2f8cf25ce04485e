#!/usr/bin/env bash
# Regenerates deploy/'s generated files from the uc binary (crates/uc/tests/deploy.rs checks them).
set -euo pipefail
cd "$(dirname "$0")/.."
uc=${UC:-./target/debug/uc}
"$uc" crds > deploy/crds.yaml
{
  echo "# Generated: \`bash deploy/generate.sh\` (uc rbac --service-account uc-system/uc). The engine's own rules;"
  echo "# add each controller's with \`uc rbac --no-engine-rules --name uc-controller-NAME --service-account uc-system/uc controller.yaml\`."
  cat <<'YAML'
apiVersion: v1
kind: ServiceAccount
metadata:
  name: uc
  namespace: uc-system
  labels:
    app.kubernetes.io/name: uc
YAML
  "$uc" rbac --service-account uc-system/uc
} > deploy/rbac.yaml
"$uc" rbac --rules-only > deploy/helm/uc/files/engine-rules.yaml
"$uc" rbac --rules-only --no-metacontroller > deploy/helm/uc/files/engine-rules-no-metacontroller.yaml
