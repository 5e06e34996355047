#!/bin/sh
# The node folder of `nodehost config create`, made with the openssl CLI: the baseline for
# bench/pki.py.  Same files, keys and certificate profiles (client: CN=system:node:NODE,
# O=system:nodes, clientAuth; server: CN and SANs from the hostnames, serverAuth, chain
# appended), the same serial file handling, a kubeconfig with inline data, and a fixed
# node-config.yaml.
#
# usage: openssl-node-folder.sh rsa|ecdsa CA_DIR NODE_DIR NODE HOSTNAME IP
set -eu

key_type=$1 ca=$2 dir=$3 node=$4 host=$5 ip=$6
mkdir -p "$dir"
umask 077

new_key() {  # $1 = key file; Origin's formats: PKCS#1 for RSA, SEC 1 for EC
    if [ "$key_type" = rsa ]; then
        openssl genrsa -traditional -out "$1" 2048 2>/dev/null
    else
        openssl ecparam -name prime256v1 -genkey -noout -out "$1"
    fi
}

sign() {  # $1 = key, $2 = subject, $3 = extensions file, $4 = cert out
    openssl req -new -key "$1" -subj "$2" |
        openssl x509 -req -CA "$ca/ca.crt" -CAkey "$ca/ca.key" -CAserial "$ca/ca.serial.txt" \
            -days 730 -sha256 -extfile "$3" -out "$4" 2>/dev/null
}

usage=digitalSignature
[ "$key_type" = rsa ] && usage=digitalSignature,keyEncipherment

cat >"$dir/client.ext" <<EOF
basicConstraints=critical,CA:FALSE
keyUsage=critical,$usage
extendedKeyUsage=clientAuth
EOF
cat >"$dir/server.ext" <<EOF
basicConstraints=critical,CA:FALSE
keyUsage=critical,$usage
extendedKeyUsage=serverAuth
subjectAltName=DNS:$host,DNS:$ip,IP:$ip
EOF

new_key "$dir/master-client.key"
sign "$dir/master-client.key" "/O=system:nodes/CN=system:node:$node" "$dir/client.ext" \
    "$dir/master-client.crt"
new_key "$dir/server.key"
sign "$dir/server.key" "/CN=$ip" "$dir/server.ext" "$dir/server.leaf"
cat "$dir/server.leaf" "$ca/ca.crt" >"$dir/server.crt"
rm -f "$dir/server.leaf" "$dir/client.ext" "$dir/server.ext"

umask 022
cp "$ca/ca.crt" "$dir/ca.crt"
cp "$ca/ca.crt" "$dir/node-client-ca.crt"
b64() { base64 -w0 "$1"; }
umask 077
cat >"$dir/node.kubeconfig" <<EOF
apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: $(b64 "$dir/ca.crt")
    server: https://master.example.com:8443
  name: master-example-com:8443
contexts:
- context:
    cluster: master-example-com:8443
    namespace: default
    user: system:node:$node/master-example-com:8443
  name: default/master-example-com:8443/system:node:$node
current-context: default/master-example-com:8443/system:node:$node
kind: Config
preferences: {}
users:
- name: system:node:$node/master-example-com:8443
  user:
    client-certificate-data: $(b64 "$dir/master-client.crt")
    client-key-data: $(b64 "$dir/master-client.key")
EOF
umask 022
cat >"$dir/node-config.yaml" <<EOF
apiVersion: v1
kind: NodeConfig
masterKubeConfig: node.kubeconfig
nodeName: $node
servingInfo:
  bindAddress: 0.0.0.0:10250
  certFile: server.crt
  clientCA: node-client-ca.crt
  keyFile: server.key
EOF
printf '{"kind":"Node","apiVersion":"v1","metadata":{"name":"%s"}}\n' "$node" \
    >"$dir/node-registration.json"
