package apperr

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"unicode"
)

// WrongJSONType is the EINVALID naming the field of a JSON body whose
// value has the wrong type ("ports":"8000"), in the API's words rather
// than Go's; nil when err is not such an error.
func WrongJSONType(err error) *Error {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) || te.Field == "" {
		return nil
	}
	// The path names an embedded struct's Go type on the way
	// ("RentFields.ports"), where the JSON has no key: the API's keys
	// are snake_case, so a capitalised step before the last is skipped.
	path := strings.Split(te.Field, ".")
	for len(path) > 1 && path[0] != "" && unicode.IsUpper(rune(path[0][0])) {
		path = path[1:]
	}
	field := path[0]
	return Invalid(field, fmt.Sprintf("%s: want a JSON %s, not a JSON %s", field, jsonKind(te.Type), te.Value))
}

// jsonKind names what JSON value a Go type is decoded from.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "object"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Pointer:
		return jsonKind(t.Elem())
	}
	return "number"
}
