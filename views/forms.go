package views

// Form is a submitted (or empty) form: values to show again and a message
// per field. Passwords are never shown again.
type Form struct {
	Values map[string]string
	Errors map[string]string
}

// Get returns the value of a field.
func (f Form) Get(name string) string { return f.Values[name] }

// Err returns a field's message.
func (f Form) Err(name string) string { return f.Errors[name] }
