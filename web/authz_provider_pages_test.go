package web_test

// providerPagesCovered lists the provider portal routes whose
// authorisation the tests in this file check.
var providerPagesCovered = []string{}
