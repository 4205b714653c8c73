package gpu

import "fmt"

// SetUtilization makes simulated GPU index report pct percent
// utilisation (0–100) from now on, as a workload on it would (a new Sim's
// GPUs are idle, 0 %): what watches utilisation, the rental's usage page
// and API, is tested with it.
func (s *Sim) SetUtilization(index, pct int) error {
	if index < 0 || index >= len(s.devs) {
		return fmt.Errorf("gpu: no GPU %d on this %d-GPU host", index, len(s.devs))
	}
	if pct < 0 || pct > 100 {
		return fmt.Errorf("gpu: utilisation %d%% is not 0–100", pct)
	}
	s.lock()
	defer s.mu.Unlock()
	s.devs[index].util = uint32(pct)
	return nil
}
