package locales

// ArgCountOf is how many arguments a message takes in a language (for
// tests).
func ArgCountOf(lang, key string) int { return verbs(T(lang, key)) }
