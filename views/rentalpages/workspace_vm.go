package rentalpages

import (
	"net/url"
	"path"
	"strconv"
	"time"

	"suanli/routenames"
	"suanli/views"
)

// WorkspaceVM is the rental page's browser-access section: Jupyter, the
// terminal, files, declared ports and their share links, the container's
// output (the scp and rsync lines are beside SSH, in Access).
type WorkspaceVM struct {
	RentalID int64
	// Open: the viewer may work in the container and it runs, so the
	// links below work. Otherwise Why is the message key of the reason.
	Open bool
	Why  string
	// CanWork: the viewer may work in it (the renter or an org admin).
	CanWork bool
	// JupyterKind is "lab" or "notebook" when its image runs Jupyter.
	JupyterKind string
	Ports       []int
	Shares      []Share
}

// Share is a live share link of a declared port (its token is shown only
// once, when made).
type Share struct {
	ID        int64
	Port      int
	ExpiresAt time.Time
}

// ShareHours are the lifetimes offered for a share link.
var ShareHours = []int{1, 8, 24, 72, 168}

func (vm WorkspaceVM) id() string { return strconv.FormatInt(vm.RentalID, 10) }

func (vm WorkspaceVM) jupyterURL(vc views.Ctx) string {
	return vc.URL(routenames.RentalsJupyter, vm.id(), "")
}

func (vm WorkspaceVM) portURL(vc views.Ctx, port int) string {
	return vc.URL(routenames.RentalsPort, vm.id(), strconv.Itoa(port), "")
}

func (vm WorkspaceVM) logsURL(vc views.Ctx, follow bool) string {
	u := vc.URL(routenames.RentalsLogs, vm.id())
	if follow {
		return u + "?follow=1&tail=200"
	}
	return u + "?tail=500"
}

// TerminalVM is the terminal page.
type TerminalVM struct {
	RentalID int64
	Title    string
}

// FilesVM is the workspace's files page: one directory of /workspace.
type FilesVM struct {
	RentalID int64
	Title    string
	// Dir is the directory below /workspace ("" the workspace itself);
	// Crumbs lead back up to it.
	Dir     string
	Crumbs  []Crumb
	Entries []FileEntry
	// Error is why the directory could not be read ("" none).
	Error string
	// Truncated: the directory holds more entries than are listed.
	Truncated bool
	// SCP is the scp line for this directory ("" without SSH).
	SCP string
}

// Crumb is one step of the files page's path.
type Crumb struct {
	Name, Dir string
}

// FileEntry is one file or directory of a FilesVM.
type FileEntry struct {
	Name    string
	Dir     bool
	Size    int64
	ModTime time.Time
	// Path is the entry's path below /workspace.
	Path string
}

func (vm FilesVM) id() string { return strconv.FormatInt(vm.RentalID, 10) }

func (vm FilesVM) dirURL(vc views.Ctx, dir string) string {
	u := vc.URL(routenames.RentalsFiles, vm.id())
	if dir != "" {
		u += "?path=" + url.QueryEscape(dir)
	}
	return u
}

func (vm FilesVM) downloadURL(vc views.Ctx, p string) string {
	return vc.URL(routenames.RentalsFilesDownload, vm.id()) + "?path=" + url.QueryEscape(p)
}

// joinWorkspace is the workspace path of dir ("workspace" itself for "").
func joinWorkspace(dir string) string { return path.Join("workspace", dir) }

// ShareCreatedVM is a share link just made.
type ShareCreatedVM struct {
	RentalID  int64
	Port      int
	Link      string
	ExpiresAt time.Time
}
