package codec

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/skiff-lab/skiff/controlplane/store"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var statusGVK = schema.GroupVersionKind{Version: "v1", Kind: "Status"}

// WriteError answers with a metav1.Status. Errors that are not API status
// errors become 500s and are logged.
func WriteError(w http.ResponseWriter, err error) {
	var se apierrors.APIStatus
	if !errors.As(err, &se) {
		slog.Error("internal error", "err", err)
		se = apierrors.NewInternalError(err)
	}
	status := se.Status()
	status.Kind, status.APIVersion = statusGVK.Kind, statusGVK.Version
	WriteJSON(w, int(status.Code), &status)
}

// StoreError turns a store error about one object into an API status error.
func StoreError(err error, gr schema.GroupResource, name string) error {
	if ec, ok := errors.AsType[*store.ExpiredContinueError](err); ok {
		expired := apierrors.NewResourceExpired("The provided continue parameter is too old to display a consistent list result. " +
			"You can start a new list without the continue parameter, or use the continue token in this response to retrieve " +
			"the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that " +
			"were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.")
		expired.ErrStatus.ListMeta.Continue = ec.Continue
		return expired
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		return apierrors.NewNotFound(gr, name)
	case errors.Is(err, store.ErrExists):
		return apierrors.NewAlreadyExists(gr, name)
	case errors.Is(err, store.ErrConflict):
		return Conflict(gr, name)
	case errors.Is(err, store.ErrExpired):
		return apierrors.NewResourceExpired("too old resource version")
	case errors.Is(err, store.ErrBadContinue):
		return apierrors.NewBadRequest(fmt.Sprintf("invalid continue token: %v", err))
	}
	return err
}

// Conflict is the error of an update whose resourceVersion is not the
// stored one.
func Conflict(gr schema.GroupResource, name string) error {
	return apierrors.NewConflict(gr, name, errors.New("the object has been modified; please apply your changes to the latest version and try again"))
}

// SuccessStatus is the Status of a success that returns no object.
func SuccessStatus(details *metav1.StatusDetails) *metav1.Status {
	return &metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusSuccess,
		Details:  details,
	}
}

// UnsupportedMediaType is a 415 for a body in a format the server does not
// read.
func UnsupportedMediaType(contentType string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusUnsupportedMediaType,
		Reason:  metav1.StatusReasonUnsupportedMediaType,
		Message: fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: %s, %s, %s", MediaJSON, MediaYAML, MediaProtobuf),
		Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: metav1.CauseTypeUnexpectedServerResponse, Message: contentType}}},
	}}
}
