package api

// PublishedNotificationSpec is the spec of a PublishedNotification: an
// event a Component publishes, copied from its eventNotification item.
type PublishedNotificationSpec struct {
	NotificationFields
	// Hub is the path of the event hub.
	Hub string `json:"hub"`
}

// SubscribedNotificationSpec is the spec of a SubscribedNotification: an
// event a Component listens to, copied from its eventNotification item.
type SubscribedNotificationSpec struct {
	NotificationFields
	// Callback is the path the events are delivered to.
	Callback string `json:"callback"`
	Query    string `json:"query"`
}

// NotificationFields are the fields both notification kinds share.
type NotificationFields struct {
	Name           string                      `json:"name"`
	Description    string                      `json:"description"`
	APIType        string                      `json:"apiType"`
	Specification  []NotificationSpecification `json:"specification"`
	Implementation string                      `json:"implementation"`
	DeveloperUI    string                      `json:"developerUI"`
	Port           *int64                      `json:"port"`
}

// NotificationSpecification is one specification[] element of an event.
type NotificationSpecification struct {
	URL     string `json:"url"`
	Version string `json:"version"`
}

// NotificationStatus is the status of both notification kinds; odaflow
// writes it once, on creation, as {uid: "", status: initializing, error: ""}.
type NotificationStatus struct {
	UID    string `json:"uid"`
	Status string `json:"status"`
	Error  string `json:"error"`
}
