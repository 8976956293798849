package api

// ComponentSpec is the spec of an oda.tmforum.org/v1 Component: the parts of it
// odaflow reads to work out the Component's children. The metadata block
// (spec.componentMetadata) is informational and not read.
type ComponentSpec struct {
	CoreFunction       *Function          `json:"coreFunction"`
	ManagementFunction *Function          `json:"managementFunction"`
	SecurityFunction   *SecurityFunction  `json:"securityFunction"`
	EventNotification  *EventNotification `json:"eventNotification"`
}

// Function is one of coreFunction, managementFunction and securityFunction:
// the APIs the Component exposes and the APIs it depends on. Each becomes
// an ExposedAPI or DependentAPI child per specification[] element.
type Function struct {
	ExposedAPIs   []ExposedAPIDeclaration   `json:"exposedAPIs"`
	DependentAPIs []DependentAPIDeclaration `json:"dependentAPIs"`
}

// SecurityFunction is spec.securityFunction.
type SecurityFunction struct {
	Function
	// CanvasSystemRole is the role odaflow grants the Canvas in the
	// Component's IdentityConfig; required.
	CanvasSystemRole Text `json:"canvasSystemRole"`
	// ComponentRole is copied as it is to the IdentityConfig, which reads it.
	ComponentRole []any `json:"componentRole"`
	// SecretsManagement is copied as it is to the SecretsManagement child's
	// spec (decoded there as SecretsManagementSpec); an empty block is none.
	SecretsManagement map[string]any `json:"secretsManagement"`
}

// EventNotification is spec.eventNotification: each event becomes a
// PublishedNotification or SubscribedNotification child.
type EventNotification struct {
	PublishedEvents  []EventDeclaration `json:"publishedEvents"`
	SubscribedEvents []EventDeclaration `json:"subscribedEvents"`
}

// EventDeclaration is one publishedEvents[] or subscribedEvents[] item.
type EventDeclaration struct {
	Name Text `json:"name"`
	// Raw is the whole item, the notification child's spec.
	Raw map[string]any `json:"-" decode:"raw"`
}

// APIDeclaration holds the fields exposed and dependent API declarations
// share. The Canvas v1 puts url and version in specification[]; at the root
// they are the older shape, still read, with the element's value winning.
type APIDeclaration struct {
	// Name names the child (<component>-<name>[-<major version>]); required.
	Name      Text  `json:"name"`
	ID        Text  `json:"id"`
	URL       Text  `json:"url"`
	Version   Text  `json:"version"`
	APIType   Text  `json:"apiType"`
	APISDO    Text  `json:"apiSDO"`
	Resources []any `json:"resources"`
	Required  *bool `json:"required"`
}

// ExposedAPIDeclaration is one exposedAPIs[] item.
type ExposedAPIDeclaration struct {
	APIDeclaration
	Specification Specifications[ExposedSpecification] `json:"specification"`
	ExposedFields
}

// DependentAPIDeclaration is one dependentAPIs[] item.
type DependentAPIDeclaration struct {
	APIDeclaration
	Specification Specifications[DependentSpecification] `json:"specification"`
	// Selector narrows the providers (namespace, releaseName, zone);
	// odaflow honours it where the Canvas ignored it.
	Selector map[string]any `json:"selector"`
}

// ExposedFields are the fields an exposed API may give at its root or in a
// specification[] element (the element's value wins).
type ExposedFields struct {
	// Implementation is the Service that implements the API.
	Implementation Text `json:"implementation"`
	// Path is the API's public path prefix, starting with /.
	Path        Text   `json:"path"`
	DeveloperUI Text   `json:"developerUI"`
	Port        *int64 `json:"port"`
	// GatewayConfiguration's policies (rateLimit, quota, CORS, ...) are
	// lifted onto the ExposedAPI spec, which decodes them.
	GatewayConfiguration map[string]any `json:"gatewayConfiguration"`
	// Hostname and BasicAuth are unofficial extras the Canvas Istio
	// operator reads, carried to the ExposedAPI unchanged.
	Hostname  any `json:"hostname"`
	BasicAuth any `json:"basicAuth"`
}

// SpecificationElement holds the fields of any specification[] element.
type SpecificationElement struct {
	URL       Text  `json:"url"`
	Version   Text  `json:"version"`
	APIType   Text  `json:"apiType"`
	APISDO    Text  `json:"apiSDO"`
	Resources []any `json:"resources"`
}

// ExposedSpecification is one specification[] element of an exposed API.
type ExposedSpecification struct {
	SpecificationElement
	ExposedFields
}

// DependentSpecification is one specification[] element of a dependent API.
type DependentSpecification struct {
	SpecificationElement
	Selector map[string]any `json:"selector"`
}

// ComponentSecretsManagement is what a Component's
// securityFunction.secretsManagement must hold for odaflow to create the
// SecretsManagement child.
type ComponentSecretsManagement struct {
	Type        Text           `json:"type"`
	PodSelector map[string]any `json:"podSelector"`
}

// Function returns the function block named by segment (coreFunction,
// managementFunction or securityFunction), empty when absent.
func (s ComponentSpec) Function(segment string) Function {
	var f *Function
	switch segment {
	case "coreFunction":
		f = s.CoreFunction
	case "managementFunction":
		f = s.ManagementFunction
	case "securityFunction":
		if s.SecurityFunction != nil {
			f = &s.SecurityFunction.Function
		}
	}
	if f == nil {
		return Function{}
	}
	return *f
}
