package pages

import (
	"suanli/catalog"
	"suanli/views"
)

// bf16Short is the BF16 cell's figure: the nominal dense BF16 TFLOPS, or
// for a GPU without BF16 its FP16 figure, named so.
func bf16Short(vc views.Ctx, m catalog.GPUModel) string {
	if m.BF16TFLOPS == 0 {
		return vc.T("offers.fp16_only", views.Num(m.FP16TFLOPS))
	}
	return views.Num(m.BF16TFLOPS)
}

// measuredTitle says in full what the table's measured share stands for:
// the node's latest report's BF16 TFLOPS and its share of nominal, as far
// as the report says.
func measuredTitle(vc views.Ctx, r *OfferReport) string {
	switch {
	case r.BF16TFLOPS != nil && r.PctOfNominal != nil:
		return vc.T("offers.m.measured_pct", tflopsText(*r.BF16TFLOPS), pctText(*r.PctOfNominal))
	case r.BF16TFLOPS != nil:
		return vc.T("offers.m.measured", tflopsText(*r.BF16TFLOPS))
	case r.PctOfNominal != nil:
		return vc.T("offers.m.pct_of_nominal", pctText(*r.PctOfNominal))
	}
	return ""
}

// dcPlace is where an offer's datacentre is: city and district.
func dcPlace(vc views.Ctx, o OfferRow) string {
	s := vc.CityName(o.DC.City)
	if d := o.DC.District; d != "" {
		s += " · " + d
	}
	return s
}
