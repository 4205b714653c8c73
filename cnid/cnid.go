// Package cnid checks the two identifiers mainland China's real-name rules
// turn on: the 18-character resident identity number (GB 11643-1999) and
// the 18-character unified social credit code of an organisation
// (GB 32100-2015), which is also a company's taxpayer identification
// number. Both end in a check character computed from the others, so a
// mistyped character is caught before anything is stored or sent.
package cnid

import (
	"errors"
	"strings"
	"time"
)

// Errors a check returns; each is wrapped with what was wrong.
var (
	// ErrLength: not exactly 18 characters.
	ErrLength = errors.New("must be exactly 18 characters")
	// ErrCharacter: a character the identifier's alphabet does not have.
	ErrCharacter = errors.New("has a character that cannot appear there")
	// ErrCheck: the check character does not match the others (a typo).
	ErrCheck = errors.New("check character does not match: a character is mistyped")
	// ErrBirthDate: the birth date in a resident ID is not a real,
	// plausible date.
	ErrBirthDate = errors.New("birth date is not a plausible date")
	// ErrRegion: the leading region code names no province.
	ErrRegion = errors.New("region code names no province")
)

// residentWeights are GB 11643's weights, 2^(17−i) mod 11.
var residentWeights = [17]int{7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2}

// residentCheck maps the weighted sum mod 11 to the check character.
const residentCheck = "10X98765432"

// provinces are the two-digit province codes (GB/T 2260) a resident ID
// or a residence permit (81 Hong Kong, 82 Macao, 83 Taiwan) starts with.
var provinces = map[string]bool{
	"11": true, "12": true, "13": true, "14": true, "15": true,
	"21": true, "22": true, "23": true,
	"31": true, "32": true, "33": true, "34": true, "35": true, "36": true, "37": true,
	"41": true, "42": true, "43": true, "44": true, "45": true, "46": true,
	"50": true, "51": true, "52": true, "53": true, "54": true,
	"61": true, "62": true, "63": true, "64": true, "65": true,
	"71": true, "81": true, "82": true, "83": true,
}

// ResidentID checks an 18-character resident identity number and returns
// it normalised (a lowercase check character x made X, surrounding space
// trimmed). The birth date (characters 7–14) must be a real date between
// 1900-01-01 and today (now, in Asia/Shanghai).
func ResidentID(s string, now time.Time) (string, error) {
	s = strings.ToUpper(strings.TrimSpace(s))
	if len(s) != 18 {
		return "", ErrLength
	}
	sum := 0
	for i := 0; i < 17; i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return "", ErrCharacter
		}
		sum += int(c-'0') * residentWeights[i]
	}
	if c := s[17]; (c < '0' || c > '9') && c != 'X' {
		return "", ErrCharacter
	}
	if !provinces[s[:2]] {
		return "", ErrRegion
	}
	birth, err := time.ParseInLocation("20060102", s[6:14], shanghai)
	if err != nil || birth.Year() < 1900 || birth.After(now.In(shanghai)) {
		return "", ErrBirthDate
	}
	if residentCheck[sum%11] != s[17] {
		return "", ErrCheck
	}
	return s, nil
}

// shanghai is the zone resident IDs' birth dates are written in.
var shanghai = func() *time.Location {
	if l, err := time.LoadLocation("Asia/Shanghai"); err == nil {
		return l
	}
	return time.FixedZone("CST", 8*3600)
}()

// creditAlphabet is GB 32100's alphabet: digits and the capitals without
// I, O, S, V and Z; a character's value is its index.
const creditAlphabet = "0123456789ABCDEFGHJKLMNPQRTUWXY"

// creditWeights are GB 32100's weights, 3^i mod 31.
var creditWeights = [17]int{1, 3, 9, 27, 19, 26, 16, 17, 20, 29, 25, 13, 8, 24, 10, 30, 28}

// CreditCode checks an 18-character unified social credit code (统一社会信用代码,
// also the taxpayer identification number of a company) and returns it
// normalised: upper case, surrounding space trimmed.
func CreditCode(s string) (string, error) {
	s = strings.ToUpper(strings.TrimSpace(s))
	if len(s) != 18 {
		return "", ErrLength
	}
	sum := 0
	for i := 0; i < 17; i++ {
		v := strings.IndexByte(creditAlphabet, s[i])
		if v < 0 {
			return "", ErrCharacter
		}
		sum += v * creditWeights[i]
	}
	if strings.IndexByte(creditAlphabet, s[17]) < 0 {
		return "", ErrCharacter
	}
	if creditAlphabet[(31-sum%31)%31] != s[17] {
		return "", ErrCheck
	}
	return s, nil
}

// Mask shows an identifier's first four and last four characters, the
// rest as asterisks (5101**********1234): enough for its owner to know
// it, too little to use it. Shorter values are masked whole but for
// their last character.
func Mask(s string) string {
	r := []rune(s)
	if len(r) <= 8 {
		if len(r) == 0 {
			return ""
		}
		return strings.Repeat("*", len(r)-1) + string(r[len(r)-1])
	}
	return string(r[:4]) + strings.Repeat("*", len(r)-8) + string(r[len(r)-4:])
}
