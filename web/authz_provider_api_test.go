package web_test

// providerAPICovered lists the provider API routes whose authorisation the
// tests in this file check (a provider never reaches another's records).
var providerAPICovered = []string{}
