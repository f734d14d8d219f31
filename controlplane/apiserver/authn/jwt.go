package authn

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/apis/apiserver/install"
	apiservervalidation "k8s.io/apiserver/pkg/apis/apiserver/validation"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/cel"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/apiserver/plugin/pkg/authenticator/token/oidc"
)

// OIDC is kube-apiserver's --oidc-* flags: one OpenID Connect issuer whose
// ID tokens are taken as bearer tokens.
type OIDC struct {
	IssuerURL, ClientID           string
	CAFile                        string // the issuer's CA; default the host's
	UsernameClaim, UsernamePrefix string // UsernameClaim default "sub"
	GroupsClaim, GroupsPrefix     string
	RequiredClaims                map[string]string
	SigningAlgs                   []string // default RS256; for --authentication-config's issuers too
}

// JWTAuthenticator maps the flags to the authentication configuration's
// form, as kube-apiserver does: a username claim other than email gets the
// issuer's URL and "#" as its prefix unless one is given ("-": none).
func (o OIDC) JWTAuthenticator() (apiserver.JWTAuthenticator, error) {
	if o.IssuerURL == "" || o.ClientID == "" {
		return apiserver.JWTAuthenticator{}, errors.New("--oidc-issuer-url and --oidc-client-id go together")
	}
	claim := o.UsernameClaim
	if claim == "" {
		claim = "sub"
	}
	prefix := o.UsernamePrefix
	if prefix == "" && claim != "email" {
		prefix = o.IssuerURL + "#"
	}
	if prefix == "-" {
		prefix = ""
	}
	a := apiserver.JWTAuthenticator{
		Issuer:        apiserver.Issuer{URL: o.IssuerURL, Audiences: []string{o.ClientID}},
		ClaimMappings: apiserver.ClaimMappings{Username: apiserver.PrefixedClaimOrExpression{Claim: claim, Prefix: &prefix}},
	}
	if o.GroupsClaim != "" {
		groupsPrefix := o.GroupsPrefix
		a.ClaimMappings.Groups = apiserver.PrefixedClaimOrExpression{Claim: o.GroupsClaim, Prefix: &groupsPrefix}
	}
	for claim, value := range o.RequiredClaims {
		a.ClaimValidationRules = append(a.ClaimValidationRules, apiserver.ClaimValidationRule{Claim: claim, RequiredValue: value})
	}
	if o.CAFile != "" {
		ca, err := os.ReadFile(o.CAFile)
		if err != nil {
			return a, fmt.Errorf("--oidc-ca-file: %w", err)
		}
		a.Issuer.CertificateAuthority = string(ca)
	}
	return a, nil
}

// LoadAuthenticationConfig reads an AuthenticationConfiguration file
// (apiserver.config.k8s.io/v1, kube-apiserver's --authentication-config)
// and checks it as kube-apiserver does. Only its jwt authenticators are
// used.
func LoadAuthenticationConfig(path string) ([]apiserver.JWTAuthenticator, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--authentication-config: %w", err)
	}
	scheme := runtime.NewScheme()
	install.Install(scheme)
	obj, _, err := serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDecoder().Decode(data, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("--authentication-config %s: %w", path, err)
	}
	cfg, ok := obj.(*apiserver.AuthenticationConfiguration)
	if !ok {
		return nil, fmt.Errorf("--authentication-config %s: a %T, not an AuthenticationConfiguration", path, obj)
	}
	if errs := apiservervalidation.ValidateAuthenticationConfiguration(cel.NewDefaultCompiler(), cfg, nil); len(errs) > 0 {
		return nil, fmt.Errorf("--authentication-config %s: %w", path, errs.ToAggregate())
	}
	if cfg.Anonymous != nil {
		return nil, fmt.Errorf("--authentication-config %s: anonymous is set with --anonymous-auth, not here", path)
	}
	return cfg.JWT, nil
}

// NewJWT builds one token authenticator per JWT issuer (k8s.io/apiserver's
// OIDC authenticator, which fetches the issuer's discovery document and
// keys in the background until ctx ends) and a readiness check for each:
// a token is refused until its issuer's keys are known. algs are the
// signing algorithms taken (default RS256).
func NewJWT(ctx context.Context, jwts []apiserver.JWTAuthenticator, algs []string) ([]authenticator.Token, []healthz.HealthChecker, error) {
	var tokens []authenticator.Token
	var checks []healthz.HealthChecker
	for i, jwt := range jwts {
		opts := oidc.Options{JWTAuthenticator: jwt, SupportedSigningAlgs: algs}
		if jwt.Issuer.CertificateAuthority != "" {
			ca, err := dynamiccertificates.NewStaticCAContent("oidc-authenticator", []byte(jwt.Issuer.CertificateAuthority))
			if err != nil {
				return nil, nil, fmt.Errorf("jwt[%d].issuer.certificateAuthority: %w", i, err)
			}
			opts.CAContentProvider = ca
		}
		a, err := oidc.New(ctx, opts)
		if err != nil {
			return nil, nil, fmt.Errorf("jwt[%d] (%s): %w", i, jwt.Issuer.URL, err)
		}
		tokens = append(tokens, a)
		checks = append(checks, healthz.NamedCheck(fmt.Sprintf("authentication/jwt/%d", i),
			func(*http.Request) error { return a.HealthCheck() }))
	}
	return tokens, checks, nil
}
