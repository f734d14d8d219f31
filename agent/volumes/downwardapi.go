package volumes

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// FieldResolver gives the values downwardAPI files hold. The agent
// implements it for one pod.
type FieldResolver interface {
	// Field is the value of a pod field such as metadata.name or
	// metadata.labels (one `key="value"` per line for maps).
	Field(fieldPath string) (string, error)
	// Resource is a container's limit or request as sel asks for it.
	Resource(containerName string, sel *v1.ResourceFieldSelector) (string, error)
}

// DownwardAPIFiles computes the files of a downwardAPI volume: each item
// becomes a file at its (cleaned) path holding the field or resource value
// fields resolves, with its lines sorted as the kubelet does, or an empty
// file when the item names neither. A file's mode is its item's mode, else
// defaultMode, else 0644. Errors of all items are joined, each naming the
// item's path; fields is only called for items that need it.
func DownwardAPIFiles(src *v1.DownwardAPIVolumeSource, fields FieldResolver) (map[string]File, error) {
	return downwardAPIFiles(src.Items, modeOr(src.DefaultMode, v1.DownwardAPIVolumeSourceDefaultMode), fields)
}

// downwardAPIFiles serves downwardAPI volumes and projections alike.
func downwardAPIFiles(items []v1.DownwardAPIVolumeFile, mode fs.FileMode, fields FieldResolver) (map[string]File, error) {
	files := make(map[string]File, len(items))
	var errs []error
	for _, item := range items {
		if err := validatePath(item.Path); err != nil {
			errs = append(errs, err)
			continue
		}
		value, err := itemValue(item, fields)
		if err != nil {
			errs = append(errs, fmt.Errorf("downwardAPI %s: %w", item.Path, err))
			continue
		}
		files[path.Clean(item.Path)] = File{Data: []byte(sortLines(value)), Mode: modeOr(item.Mode, int32(mode))}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return validated(files)
}

// itemValue resolves one downwardAPI item.
func itemValue(item v1.DownwardAPIVolumeFile, fields FieldResolver) (string, error) {
	if item.FieldRef == nil && item.ResourceFieldRef == nil {
		return "", nil
	}
	if fields == nil {
		return "", errors.New("no field resolver")
	}
	if item.FieldRef != nil {
		return fields.Field(item.FieldRef.FieldPath)
	}
	return fields.Resource(item.ResourceFieldRef.ContainerName, item.ResourceFieldRef)
}

// sortLines sorts the lines of a value, so that maps (labels, annotations)
// are written in a stable order.
func sortLines(s string) string {
	lines := strings.Split(s, "\n")
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}
