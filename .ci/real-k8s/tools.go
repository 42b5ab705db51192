//go:build tools

// Package tools records the programs .ci/real-k8s.sh builds, so that go mod tidy keeps
// their dependencies in go.sum.
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
)
