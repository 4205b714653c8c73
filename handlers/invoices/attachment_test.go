package invoices

import "testing"

// An invoice file's name reaches every client: ASCII in filename (no
// quote, no path, nothing a header could be split on), exact in
// RFC 5987's filename*.
func TestInvoiceAttachmentNames(t *testing.T) {
	cases := []struct{ name, want string }{
		{"fapiao-26510000000000000042.pdf", `attachment; filename="fapiao-26510000000000000042.pdf"; filename*=UTF-8''fapiao-26510000000000000042.pdf`},
		{"发票-1.ofd", `attachment; filename="__-1.ofd"; filename*=UTF-8''%E5%8F%91%E7%A5%A8-1.ofd`},
		{"a\"b\r\n/..\\c.pdf", `attachment; filename="a_b___.._c.pdf"; filename*=UTF-8''a%22b%0D%0A%2F..%5Cc.pdf`},
	}
	for _, c := range cases {
		if got := attachment(c.name); got != c.want {
			t.Errorf("attachment(%q) = %s, want %s", c.name, got, c.want)
		}
	}
}
