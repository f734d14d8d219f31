// Package encryption encrypts resources at rest as kube-apiserver's
// --encryption-provider-config does: an apiserver.config.k8s.io/v1
// EncryptionConfiguration names, per resource ("secrets", "deployments.apps",
// "*.apps", "*.*"), providers in order — aesgcm, aescbc and secretbox with
// named keys, and identity (plain). The first provider of a resource's
// list encrypts what is written, as k8s:enc:<provider>:v1:<key name>:
// followed by the ciphertext; every provider listed decrypts what carries
// its prefix, so a key is rotated by adding the new one first and
// rewriting the objects. The ciphers are k8s.io/apiserver's.
package encryption

import (
	"crypto/aes"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strings"

	apiserverv1 "k8s.io/apiserver/pkg/apis/apiserver/v1"
	"k8s.io/apiserver/pkg/storage/value"
	aestransformer "k8s.io/apiserver/pkg/storage/value/encrypt/aes"
	"k8s.io/apiserver/pkg/storage/value/encrypt/identity"
	"k8s.io/apiserver/pkg/storage/value/encrypt/secretbox"
	"sigs.k8s.io/yaml"
)

// Config maps resources to the transformers that store them.
type Config struct {
	rules []rule
}

// rule is one resources entry of the file.
type rule struct {
	patterns    []string
	transformer value.Transformer
}

// Load reads the EncryptionConfiguration at path.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var ec apiserverv1.EncryptionConfiguration
	if err := yaml.UnmarshalStrict(data, &ec); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if ec.Kind != "EncryptionConfiguration" || ec.APIVersion != apiserverv1.SchemeGroupVersion.String() {
		return nil, fmt.Errorf("%s: want kind EncryptionConfiguration of %s, got %q of %q", path,
			apiserverv1.SchemeGroupVersion, ec.Kind, ec.APIVersion)
	}
	c := &Config{}
	for i, rc := range ec.Resources {
		t, err := transformer(rc.Providers)
		if err != nil {
			return nil, fmt.Errorf("%s: resources[%d]: %w", path, i, err)
		}
		if len(rc.Resources) == 0 {
			return nil, fmt.Errorf("%s: resources[%d]: no resources listed", path, i)
		}
		c.rules = append(c.rules, rule{patterns: rc.Resources, transformer: t})
	}
	return c, nil
}

// For is the transformer of resource (plural) of group ("" for core), the
// first entry that names it; nil when none does (stored plain).
func (c *Config) For(resource, group string) value.Transformer {
	name := resource
	if group != "" {
		name += "." + group
	}
	for _, r := range c.rules {
		for _, p := range r.patterns {
			if p == name || p == "*."+group || p == "*.*" {
				return r.transformer
			}
		}
	}
	return nil
}

// transformer chains a resource's providers: the first writes, all read.
func transformer(providers []apiserverv1.ProviderConfiguration) (value.Transformer, error) {
	if len(providers) == 0 {
		return nil, errors.New("no providers")
	}
	var chain []value.PrefixTransformer
	for i, p := range providers {
		ts, err := provider(p)
		if err != nil {
			return nil, fmt.Errorf("providers[%d]: %w", i, err)
		}
		chain = append(chain, ts...)
	}
	return value.NewPrefixTransformers(errors.New("no matching prefix found"), chain...), nil
}

// provider makes one provider's transformers, one per key in order.
func provider(p apiserverv1.ProviderConfiguration) ([]value.PrefixTransformer, error) {
	switch {
	case p.AESGCM != nil:
		return keyed("aesgcm", p.AESGCM.Keys, func(key []byte) (value.Transformer, error) {
			block, err := aes.NewCipher(key)
			if err != nil {
				return nil, err
			}
			return aestransformer.NewGCMTransformer(block)
		})
	case p.AESCBC != nil:
		return keyed("aescbc", p.AESCBC.Keys, func(key []byte) (value.Transformer, error) {
			if len(key) != 32 {
				return nil, fmt.Errorf("aescbc wants a 32-byte key, got %d bytes", len(key))
			}
			block, err := aes.NewCipher(key)
			if err != nil {
				return nil, err
			}
			return aestransformer.NewCBCTransformer(block), nil
		})
	case p.Secretbox != nil:
		return keyed("secretbox", p.Secretbox.Keys, func(key []byte) (value.Transformer, error) {
			if len(key) != 32 {
				return nil, fmt.Errorf("secretbox wants a 32-byte key, got %d bytes", len(key))
			}
			return secretbox.NewSecretboxTransformer([32]byte(key)), nil
		})
	case p.Identity != nil:
		return []value.PrefixTransformer{{Transformer: identity.NewEncryptCheckTransformer()}}, nil
	case p.KMS != nil:
		return nil, errors.New("kms providers are not supported")
	}
	return nil, errors.New("no provider given")
}

// keyed makes a provider's transformer for each named key (base64).
func keyed(kind string, keys []apiserverv1.Key, make func([]byte) (value.Transformer, error)) ([]value.PrefixTransformer, error) {
	if len(keys) == 0 {
		return nil, fmt.Errorf("%s: no keys", kind)
	}
	var out []value.PrefixTransformer
	for _, k := range keys {
		if k.Name == "" || strings.Contains(k.Name, ":") {
			return nil, fmt.Errorf("%s: key name %q: want a name without ':'", kind, k.Name)
		}
		secret, err := base64.StdEncoding.DecodeString(k.Secret)
		if err != nil {
			return nil, fmt.Errorf("%s: key %s: secret is not base64: %w", kind, k.Name, err)
		}
		t, err := make(secret)
		if err != nil {
			return nil, fmt.Errorf("%s: key %s: %w", kind, k.Name, err)
		}
		out = append(out, value.PrefixTransformer{Prefix: []byte("k8s:enc:" + kind + ":v1:" + k.Name + ":"), Transformer: t})
	}
	return out, nil
}
