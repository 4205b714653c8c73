// Package identitystore holds the records and queries of real-name
// verification (实名认证, issue 21; migrations 00033 and 00035):
// individuals' verifications and SMS codes, and organisations'
// verifications (企业认证) with their sealed business licences. Package
// identity owns the rules; this package only reads and writes, and never
// sees a key: what it stores of personal information is already sealed.
package identitystore
