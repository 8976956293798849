package validate

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structurallisttype "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"

	odaflowchart "github.com/odaflow/odaflow/charts/odaflow"
)

// crdVersion is what the apiserver checks an object of one CRD version
// against: its OpenAPI schema (types, enums, formats, required fields), its
// structural form (unknown fields, defaults) and its CEL rules.
type crdVersion struct {
	structural *structuralschema.Structural
	validator  apiservervalidation.SchemaValidator
	cel        *cel.Validator
}

// componentVersions are the versions of the Component CRD odaflow ships
// (charts/odaflow/files/crds), by name; built once, on first use.
var componentVersions = sync.OnceValues(func() (map[string]*crdVersion, error) {
	return loadCRD("files/crds/oda-component-crd.yaml")
})

func loadCRD(file string) (map[string]*crdVersion, error) {
	raw, err := odaflowchart.CRDs.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	out := map[string]*crdVersion{}
	for _, v := range crd.Spec.Versions {
		if !v.Served || v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			continue
		}
		var internal apiextensions.JSONSchemaProps
		if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, &internal, nil); err != nil {
			return nil, fmt.Errorf("%s %s: %w", file, v.Name, err)
		}
		s, err := structuralschema.NewStructural(&internal)
		if err != nil {
			return nil, fmt.Errorf("%s %s: structural schema: %w", file, v.Name, err)
		}
		validator, _, err := apiservervalidation.NewSchemaValidator(&internal)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", file, v.Name, err)
		}
		out[v.Name] = &crdVersion{structural: s, validator: validator, cel: cel.NewValidator(s, true, celconfig.PerCallLimit)}
	}
	return out, nil
}

// apiserverProblems are the reasons the apiserver would refuse obj on
// create with strict field validation (kubectl apply --validate=strict, the
// default of kubectl 1.27 and later): a version the CRD does not serve,
// unknown fields, and the schema's types, formats, enums, required fields
// and CEL rules, each with its field path. It runs the apiserver's own
// code (k8s.io/apiextensions-apiserver) on the CRDs odaflow ships, in the
// apiserver's order: unknown fields and nulls the schema does not allow are
// pruned, defaults applied, then the rest validated.
func apiserverProblems(obj map[string]any) ([]Problem, error) {
	versions, err := componentVersions()
	if err != nil {
		return nil, fmt.Errorf("the shipped Component CRD: %w", err)
	}
	apiVersion, _ := obj["apiVersion"].(string)
	_, version, _ := strings.Cut(apiVersion, "/")
	v, ok := versions[version]
	if !ok {
		served := make([]string, 0, len(versions))
		for name := range versions {
			served = append(served, name)
		}
		sort.Strings(served)
		return []Problem{refused("apiVersion", fmt.Sprintf("the Component CRD serves no version %q (it serves %s)", version, strings.Join(served, ", ")))}, nil
	}
	u := runtime.DeepCopyJSON(obj)
	var out []Problem
	_, _, unknownMeta, err := objectmeta.GetObjectMetaWithOptions(u, objectmeta.ObjectMetaOptions{ReturnUnknownFieldPaths: true})
	if err != nil {
		out = append(out, refused("metadata", err.Error()))
	}
	unknown := append(unknownMeta, pruning.PruneWithOptions(u, v.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})...)
	// A null where the schema allows none is dropped, not refused.
	structuraldefaulting.PruneNonNullableNullsWithoutDefaults(u, v.structural)
	for _, p := range unknown {
		out = append(out, refused(p, "unknown field (misspelt, or not in this version of the Component CRD)"))
	}
	structuraldefaulting.Default(u, v.structural)
	errs := apiservervalidation.ValidateCustomResource(nil, u, v.validator)
	errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, v.structural, u)...)
	blocked := blocksCEL(errs)
	if !blocked {
		celErrs, _ := v.cel.Validate(context.Background(), nil, v.structural, u, nil, celconfig.RuntimeCELCostBudget)
		errs = append(errs, celErrs...)
	}
	for _, fe := range errs {
		out = append(out, refused(fe.Field, fe.ErrorBody()))
	}
	if blocked {
		out = append(out, Problem{Severity: Note, Path: "spec", Message: "the CRD's CEL rules are checked once these problems are fixed (the apiserver skips them too)"})
	}
	return out, nil
}

// blocksCEL: the apiserver does not evaluate a CRD's CEL rules on an object
// with a missing, mistyped, too long or unsupported value, whose rules
// would fail on the value rather than say anything of use.
func blocksCEL(errs field.ErrorList) bool {
	for _, fe := range errs {
		switch fe.Type {
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong, field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
			return true
		case field.ErrorTypeNotFound, field.ErrorTypeDuplicate, field.ErrorTypeInvalid, field.ErrorTypeForbidden,
			field.ErrorTypeTooFew, field.ErrorTypeInternal, field.ErrorTypeTooShort:
			// A wrong value of the right type: the rules still run on it.
		}
	}
	return false
}

// refused is a problem the apiserver refuses the Component for.
func refused(path, message string) Problem {
	return Problem{Severity: FailsComponent, Path: path, Message: "the apiserver refuses it: " + message}
}
