package dynadmission

import (
	"context"
	"fmt"
	"time"

	noopoteltrace "go.opentelemetry.io/otel/trace/noop"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/initializer"
	mutatingpolicy "k8s.io/apiserver/pkg/admission/plugin/policy/mutating"
	validatingpolicy "k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	webhookinit "k8s.io/apiserver/pkg/admission/plugin/webhook/initializer"
	mutatingwebhook "k8s.io/apiserver/pkg/admission/plugin/webhook/mutating"
	validatingwebhook "k8s.io/apiserver/pkg/admission/plugin/webhook/validating"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// PluginNames are the dynamic admission plugins in the order they run
// (kube-apiserver's): mutations first, policies before webhooks.
var PluginNames = []string{"MutatingAdmissionPolicy", "MutatingAdmissionWebhook", "ValidatingAdmissionPolicy", "ValidatingAdmissionWebhook"}

// Config is what the plugins need from the server.
type Config struct {
	// Loopback reaches the server as itself: the plugins' clients (the
	// namespaces selectors match, the params policies read, the schemas
	// of MutatingAdmissionPolicies' apply configurations) and a webhook
	// URL on the server itself.
	Loopback *rest.Config
	// Informers is the server's cache factory, where the plugins register
	// the informers of their configurations; the caller starts it.
	Informers informers.SharedInformerFactory
	// Authorizer answers the policies' authorizer checks.
	Authorizer authorizer.Authorizer
	// Services finds where a webhook behind a Service is served.
	Services webhook.ServiceResolver
}

// Plugins builds the dynamic admission plugins.
type Plugins struct {
	init admission.PluginInitializers
}

// NewPlugins prepares what the plugins share; they stop with ctx. Policies
// find the resources they match through discovery, re-read every 30
// seconds (as kube-apiserver does) and when a kind is not found.
func NewPlugins(ctx context.Context, cfg Config) (*Plugins, error) {
	client, err := kubernetes.NewForConfig(cfg.Loopback)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg.Loopback)
	if err != nil {
		return nil, err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(client.Discovery()))
	go wait.Until(mapper.Reset, 30*time.Second, ctx.Done())
	generic := initializer.New(client, dyn, cfg.Informers, cfg.Authorizer, utilfeature.DefaultFeatureGate,
		compatibility.DefaultBuildEffectiveVersion(), ctx.Done(), mapper)
	auth := webhook.NewDefaultAuthenticationInfoResolverWrapper(nil, nil, cfg.Loopback, noopoteltrace.NewTracerProvider())
	return &Plugins{init: admission.PluginInitializers{generic, webhookinit.NewPluginInitializer(auth, cfg.Services)}}, nil
}

// New builds the plugin of that name (one of PluginNames), initialized.
func (p *Plugins) New(name string) (admission.Interface, error) {
	var plugin admission.Interface
	var err error
	switch name {
	case "MutatingAdmissionPolicy":
		plugin, err = mutatingpolicy.NewPlugin(nil)
	case "MutatingAdmissionWebhook":
		plugin, err = mutatingwebhook.NewMutatingWebhook(nil)
	case "ValidatingAdmissionPolicy":
		plugin, err = validatingpolicy.NewPlugin(nil)
	case "ValidatingAdmissionWebhook":
		plugin, err = validatingwebhook.NewValidatingAdmissionWebhook(nil)
	default:
		return nil, fmt.Errorf("unknown dynamic admission plugin %q", name)
	}
	if err != nil {
		return nil, err
	}
	p.init.Initialize(plugin)
	if err := admission.ValidateInitialization(plugin); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return plugin, nil
}
