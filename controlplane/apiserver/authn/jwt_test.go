package authn

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestOIDCFlags(t *testing.T) {
	for _, tc := range []struct {
		name       string
		o          OIDC
		wantPrefix string
	}{
		{"sub gets the issuer as prefix", OIDC{IssuerURL: "https://idp.test", ClientID: "k"}, "https://idp.test#"},
		{"email gets none", OIDC{IssuerURL: "https://idp.test", ClientID: "k", UsernameClaim: "email"}, ""},
		{"- is none", OIDC{IssuerURL: "https://idp.test", ClientID: "k", UsernamePrefix: "-"}, ""},
		{"a prefix given", OIDC{IssuerURL: "https://idp.test", ClientID: "k", UsernamePrefix: "oidc:"}, "oidc:"},
	} {
		a, err := tc.o.JWTAuthenticator()
		if err != nil || *a.ClaimMappings.Username.Prefix != tc.wantPrefix || a.Issuer.Audiences[0] != "k" {
			t.Errorf("%s: %+v %v, want prefix %q", tc.name, a, err, tc.wantPrefix)
		}
	}
	if _, err := (OIDC{IssuerURL: "https://idp.test"}).JWTAuthenticator(); err == nil {
		t.Error("an issuer without a client ID was taken")
	}
	a, _ := OIDC{IssuerURL: "https://idp.test", ClientID: "k", GroupsClaim: "groups", RequiredClaims: map[string]string{"hd": "example.com"}}.JWTAuthenticator()
	if a.ClaimMappings.Groups.Claim != "groups" || len(a.ClaimValidationRules) != 1 || a.ClaimValidationRules[0].RequiredValue != "example.com" {
		t.Errorf("groups and required claims: %+v", a)
	}
}

func TestLoadAuthenticationConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.yaml", `apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer: {url: "https://idp.test", audiences: [skiff]}
  claimMappings:
    username: {claim: sub, prefix: "oidc:"}
    groups: {claim: groups, prefix: "oidc:"}
`)
	jwts, err := LoadAuthenticationConfig(good)
	if err != nil || len(jwts) != 1 || jwts[0].Issuer.URL != "https://idp.test" || *jwts[0].ClaimMappings.Username.Prefix != "oidc:" {
		t.Errorf("a good file: %+v %v", jwts, err)
	}
	for name, data := range map[string]string{
		"http issuer": "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\njwt:\n- issuer: {url: \"http://idp.test\", audiences: [a]}\n  claimMappings: {username: {claim: sub, prefix: \"\"}}\n",
		"unknown key": "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\njwts: []\n",
	} {
		if _, err := LoadAuthenticationConfig(write(strings.ReplaceAll(name, " ", "-")+".yaml", data)); err == nil {
			t.Errorf("%s: taken", name)
		} else if !strings.Contains(err.Error(), "--authentication-config") {
			t.Errorf("%s: %v, want the flag named", name, err)
		}
	}
}
