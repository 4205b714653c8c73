package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/image"

	"suanli/agent"
)

// ensureImage returns the image ref, pulling it first when the host does
// not have it; the pull's progress goes to progress (if not nil). A pull
// that fails fails with the daemon's reason. With registry credentials
// (auth), or when the server says the host's copy came with someone's
// credentials (always), it is pulled anyway: the registry then checks
// this renter's right to the image, and an up-to-date image only costs a
// manifest check.
func (d *Launcher) ensureImage(ctx context.Context, ref, auth string, always bool, progress func(agent.Progress)) (image.InspectResponse, error) {
	img, err := d.Client.ImageInspect(ctx, ref)
	if err == nil && auth == "" && !always {
		return img, nil
	}
	if err != nil && !cerrdefs.IsNotFound(err) {
		return img, fmt.Errorf("docker launcher: inspecting image %s: %w", ref, err)
	}
	d.log().Info("pulling image", "image", ref)
	if err := d.pull(ctx, ref, auth, progress); err != nil {
		return img, fmt.Errorf("pull %s: %w", ref, err)
	}
	img, err = d.Client.ImageInspect(ctx, ref)
	if err != nil {
		return img, fmt.Errorf("docker launcher: inspecting image %s after its pull: %w", ref, err)
	}
	return img, nil
}

// pull pulls ref, reading the daemon's JSON progress stream to its end:
// the pull's outcome is the stream's last word, an error message in it
// included.
func (d *Launcher) pull(ctx context.Context, ref, auth string, progress func(agent.Progress)) error {
	rc, err := d.Client.ImagePull(ctx, ref, image.PullOptions{RegistryAuth: auth})
	if err != nil {
		return err
	}
	defer rc.Close()
	var p pullProgress
	last := -1
	dec := json.NewDecoder(rc)
	for {
		var m pullMessage
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("reading the pull's progress: %w", err)
		}
		if m.Error != nil && m.Error.Message != "" {
			return errors.New(m.Error.Message)
		}
		if m.ErrorMessage != "" {
			return errors.New(m.ErrorMessage)
		}
		if pct := p.add(m); pct != last && progress != nil {
			last = pct
			progress(agent.Progress{Stage: "pull", Pct: pct, Detail: ref})
		}
	}
	if progress != nil && last != 100 {
		progress(agent.Progress{Stage: "pull", Pct: 100, Detail: ref})
	}
	return nil
}

// pullMessage is one message of the daemon's pull stream (the fields
// of Docker's jsonmessage.JSONMessage that matter here).
type pullMessage struct {
	ID       string `json:"id"`
	Status   string `json:"status"`
	Progress *struct {
		Current int64 `json:"current"`
		Total   int64 `json:"total"`
	} `json:"progressDetail"`
	Error *struct {
		Message string `json:"message"`
	} `json:"errorDetail"`
	// ErrorMessage is the same error as a plain string (older daemons
	// send only it).
	ErrorMessage string `json:"error"`
}

// pullProgress turns the pull stream's per-layer messages into one
// percentage: each layer's download and extraction, by bytes, half each.
// Layers the host has already count for nothing. The figure never goes
// back (a layer whose size becomes known late would pull it down) and
// stays below 100 until the stream ends.
type pullProgress struct {
	layers map[string]*layerProgress
	best   int
}

type layerProgress struct {
	total, downloaded, extracted int64
}

func (p *pullProgress) add(m pullMessage) int {
	if m.ID == "" {
		return p.best
	}
	if p.layers == nil {
		p.layers = map[string]*layerProgress{}
	}
	l := p.layers[m.ID]
	if l == nil {
		l = &layerProgress{}
		p.layers[m.ID] = l
	}
	var cur, total int64
	if m.Progress != nil {
		cur, total = m.Progress.Current, m.Progress.Total
	}
	switch m.Status {
	case "Already exists":
		delete(p.layers, m.ID)
	case "Downloading":
		if total > 0 {
			l.total, l.downloaded = total, min(cur, total)
		}
	case "Verifying Checksum", "Download complete":
		l.downloaded = l.total
	case "Extracting":
		if total > 0 {
			l.total = max(l.total, total)
			l.downloaded, l.extracted = l.total, min(cur, total)
		}
	case "Pull complete":
		l.downloaded, l.extracted = l.total, l.total
	}
	var done, all int64
	for _, l := range p.layers {
		done += l.downloaded + l.extracted
		all += 2 * l.total
	}
	if all > 0 {
		p.best = max(p.best, min(int(done*100/all), 99))
	}
	return p.best
}

// imageCUDA is an image's CUDA_VERSION environment ("" if none): the
// CUDA runtime it was built for (NVIDIA's CUDA images set it).
func imageCUDA(img image.InspectResponse) string {
	if img.Config == nil {
		return ""
	}
	for _, e := range img.Config.Env {
		if v, ok := strings.CutPrefix(e, "CUDA_VERSION="); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// majorMinor reads "12.4" or "12.4.1" as (12, 4).
func majorMinor(v string) (int, int, bool) {
	parts := strings.SplitN(strings.TrimSpace(v), ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return major, minor, true
}

// cudaCompatible says whether an image built for CUDA image runs on a
// driver supporting CUDA driver: the driver's major.minor must be at
// least the image's. Either unknown (no CUDA_VERSION, or no NVML
// figure) passes: nothing can be said.
func cudaCompatible(img, driver string) error {
	im, in, ok1 := majorMinor(img)
	dm, dn, ok2 := majorMinor(driver)
	if !ok1 || !ok2 {
		return nil
	}
	if im > dm || (im == dm && in > dn) {
		return fmt.Errorf("image needs CUDA %d.%d, this node's driver supports CUDA %d.%d", im, in, dm, dn)
	}
	return nil
}

// LocalImages implements ImageLister: the tagged images on the host,
// with their CUDA_VERSION (read once per image id).
func (d *Launcher) LocalImages(ctx context.Context) ([]agent.LocalImage, error) {
	if d.Client == nil {
		return nil, errors.New("docker launcher: no Docker client")
	}
	list, err := d.Client.ImageList(ctx, image.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := make([]agent.LocalImage, 0, len(list))
	seen := map[string]bool{}
	for _, s := range list {
		var refs []string
		for _, t := range s.RepoTags {
			if t != "" && t != "<none>:<none>" {
				refs = append(refs, t)
			}
		}
		if len(refs) == 0 {
			continue // not nameable: a layer or an untagged leftover
		}
		seen[s.ID] = true
		cuda, err := d.imageCUDACached(ctx, s.ID)
		if err != nil {
			if cerrdefs.IsNotFound(err) {
				continue // removed since the list
			}
			return nil, err
		}
		out = append(out, agent.LocalImage{Refs: refs, ID: s.ID, SizeBytes: s.Size, CUDAVersion: cuda})
	}
	d.mu.Lock()
	for id := range d.cuda {
		if !seen[id] {
			delete(d.cuda, id)
		}
	}
	d.mu.Unlock()
	return out, nil
}

// imageCUDACached is image id's CUDA_VERSION, inspected once: an image
// id names its content, which never changes.
func (d *Launcher) imageCUDACached(ctx context.Context, id string) (string, error) {
	d.mu.Lock()
	v, ok := d.cuda[id]
	d.mu.Unlock()
	if ok {
		return v, nil
	}
	img, err := d.Client.ImageInspect(ctx, id)
	if err != nil {
		return "", err
	}
	v = imageCUDA(img)
	d.mu.Lock()
	if d.cuda == nil {
		d.cuda = map[string]string{}
	}
	d.cuda[id] = v
	d.mu.Unlock()
	return v, nil
}
