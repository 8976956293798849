package conversion

// The shapes of `specification` across the versions:
//
//	v1beta2          exposed and dependent APIs: one URL string
//	v1beta3          exposed APIs: array of URL strings; dependent APIs and
//	                 events: one URL string
//	v1beta4 and v1   array of objects {url, version, ...}
//
// Every helper below first checks the value with checkSpec, so a conversion
// accepts exactly the same values in both directions: a string, or an array
// whose elements are strings or objects with a string (or absent) url.
// Tolerating the neighbouring shape matters in practice: the Canvas's own
// v1beta3 example writes one exposed API's specification as a plain string.

const specKey = "specification"

// checkSpec validates parent.specification.
func checkSpec(parent map[string]any, p fieldPath) error {
	v := parent[specKey]
	switch v := v.(type) {
	case nil, string:
		return nil
	case []any:
		for i, elem := range v {
			if _, _, err := specURL(elem, p.child(specKey).index(i)); err != nil {
				return err
			}
		}
		return nil
	default:
		return wrongType(p.child(specKey), "string or array", v)
	}
}

// specURL returns the URL of one specification element, which is either a URL
// string or an object {url, ...}. ok is false when an object has no url.
func specURL(elem any, p fieldPath) (url string, ok bool, err error) {
	switch elem := elem.(type) {
	case string:
		return elem, true, nil
	case map[string]any:
		raw, present := elem["url"]
		if !present || raw == nil {
			return "", false, nil
		}
		s, isString := raw.(string)
		if !isString {
			return "", false, wrongType(p.child("url"), "string", raw)
		}
		return s, true, nil
	default:
		return "", false, wrongType(p, "string or object", elem)
	}
}

// specToStringList turns parent.specification into an array of URL strings
// (v1beta2 -> v1beta3 wraps the single string). An array is kept as it is.
func specToStringList(parent map[string]any, p fieldPath) error {
	if err := checkSpec(parent, p); err != nil {
		return err
	}
	if s, ok := parent[specKey].(string); ok {
		parent[specKey] = []any{s}
	}
	return nil
}

// specToObjectList turns parent.specification into an array of objects: each
// URL string u becomes {url: u}; objects are kept. An empty string means "no
// specification" and removes the field.
func specToObjectList(parent map[string]any, p fieldPath) error {
	if err := checkSpec(parent, p); err != nil {
		return err
	}
	switch v := parent[specKey].(type) {
	case string:
		if v == "" {
			delete(parent, specKey)
			return nil
		}
		parent[specKey] = []any{map[string]any{"url": v}}
	case []any:
		for i, elem := range v {
			if s, ok := elem.(string); ok {
				v[i] = map[string]any{"url": s}
			}
		}
	}
	return nil
}

// specToURLList turns an array of {url, ...} objects into an array of URL
// strings (v1beta4 -> v1beta3, exposed APIs). Everything but the URL is lost,
// since v1beta3 cannot hold it; elements without a URL are dropped, and the
// field is removed when no element is left. A string is kept as it is.
func specToURLList(parent map[string]any, p fieldPath) error {
	if err := checkSpec(parent, p); err != nil {
		return err
	}
	list, ok := parent[specKey].([]any)
	if !ok {
		return nil
	}
	urls := make([]any, 0, len(list))
	for i, elem := range list {
		url, ok, _ := specURL(elem, p.child(specKey).index(i)) // checked above
		if ok {
			urls = append(urls, url)
		}
	}
	if len(urls) == 0 {
		delete(parent, specKey)
		return nil
	}
	parent[specKey] = urls
	return nil
}

// specToSingleURL turns an array into its first URL string (the Canvas
// webhook takes specification[0]); the other elements are lost, since the
// older version holds one URL only. The field is removed when there is no URL.
func specToSingleURL(parent map[string]any, p fieldPath) error {
	if err := checkSpec(parent, p); err != nil {
		return err
	}
	list, ok := parent[specKey].([]any)
	if !ok {
		return nil
	}
	for i, elem := range list {
		if url, ok, _ := specURL(elem, p.child(specKey).index(i)); ok {
			parent[specKey] = url
			return nil
		}
	}
	delete(parent, specKey)
	return nil
}

// moveIntoFirstSpec moves the listed root fields of an API or event into
// specification[0] (v1beta4 -> v1). A value already in specification[0] wins,
// as it does when the operators read a v1 Component, and the root copy is
// dropped.
//
// For APIs (always == false) the move happens only when there is exactly one
// specification element. In v1 the root values are the defaults for every
// element, so with several elements moving them into the first would strip
// them from the others, and with none there is nowhere to move them; in both
// cases they stay at the root, which v1 accepts. Events (always == true) have
// no root slot for these fields in v1, so they always go into the first
// element, which is created when needed.
func moveIntoFirstSpec(item map[string]any, fields []string, p fieldPath, always bool) error {
	if err := specToObjectList(item, p); err != nil {
		return err
	}
	if !hasAny(item, fields) {
		return nil
	}
	list, _ := item[specKey].([]any)
	switch {
	case len(list) == 1:
	case always && len(list) == 0:
		list = []any{map[string]any{}}
		item[specKey] = list
	case always:
	default:
		return nil
	}
	first := list[0].(map[string]any) // specToObjectList made every element an object
	for _, f := range fields {
		v, ok := item[f]
		if !ok {
			continue
		}
		if _, taken := first[f]; !taken {
			first[f] = v
		}
		delete(item, f)
	}
	return nil
}

// moveOutOfFirstSpec is the reverse of moveIntoFirstSpec (v1 -> v1beta4): the
// listed fields of specification[0] go to the root, where they replace any
// root value. Fields of later elements stay where they are; v1beta4 cannot
// hold per-element values. When that leaves a single empty element, the
// specification is removed, undoing the element moveIntoFirstSpec created.
func moveOutOfFirstSpec(item map[string]any, fields []string, p fieldPath) error {
	if err := checkSpec(item, p); err != nil {
		return err
	}
	list, _ := item[specKey].([]any)
	if len(list) == 0 {
		return nil
	}
	first, ok := list[0].(map[string]any)
	if !ok || !hasAny(first, fields) {
		return nil
	}
	for _, f := range fields {
		if v, ok := first[f]; ok {
			item[f] = v
			delete(first, f)
		}
	}
	if len(list) == 1 && len(first) == 0 {
		delete(item, specKey)
	}
	return nil
}

func hasAny(m map[string]any, keys []string) bool {
	for _, k := range keys {
		if _, ok := m[k]; ok {
			return true
		}
	}
	return false
}
