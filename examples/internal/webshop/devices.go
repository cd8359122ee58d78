package webshop

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/retailkit/retail"
	"github.com/retailkit/retail/retailhttp"
)

// deviceLabel names the browser and system of a User-Agent, such as
// "Firefox on Linux", for the "your devices" page: a few substrings in
// the order that tells them apart (Edge and Opera say Chrome too, Chrome
// says Safari, Android says Linux), not a full parser. The result is
// always a valid session label.
func deviceLabel(ua string) string {
	browser := "Unknown browser"
	for _, b := range []struct{ token, name string }{
		{"Edg/", "Edge"}, {"OPR/", "Opera"}, {"Firefox/", "Firefox"}, {"FxiOS/", "Firefox"},
		{"CriOS/", "Chrome"}, {"Chrome/", "Chrome"}, {"Safari/", "Safari"}, {"curl/", "curl"},
	} {
		if strings.Contains(ua, b.token) {
			browser = b.name
			break
		}
	}
	system := ""
	for _, o := range []struct{ token, name string }{
		{"Windows", "Windows"}, {"Android", "Android"}, {"iPhone", "iOS"}, {"iPad", "iPadOS"},
		{"Mac OS X", "macOS"}, {"CrOS", "ChromeOS"}, {"Linux", "Linux"},
	} {
		if strings.Contains(ua, o.token) {
			system = o.name
			break
		}
	}
	if system == "" {
		return browser
	}
	return browser + " on " + system
}

type device struct {
	ID, Label         string
	Created, LastSeen string
	This              bool // the session of the request
}

type devicesPage struct {
	common
	Devices []device
	Others  bool // there are devices other than this one
}

// loggedIn returns the request's session if it is logged in, or redirects
// to the login form and reports false.
func loggedIn(w http.ResponseWriter, r *http.Request) (retailhttp.Session, bool) {
	sess, ok := retailhttp.SessionFrom(r.Context())
	if !ok || sess.User == "" {
		http.Redirect(w, r, "/login?next="+url.QueryEscape("/devices"), http.StatusSeeOther)
		return retailhttp.Session{}, false
	}
	return sess, true
}

// devices lists the sessions of the logged-in visitor, with buttons to log
// out each other one, or all the others.
func (s *shop) devices(w http.ResponseWriter, r *http.Request) {
	sess, ok := loggedIn(w, r)
	if !ok {
		return
	}
	c, err := s.common(w, r, "Your devices")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	infos, err := s.store.UserSessions(r.Context(), sess.User)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	this := retail.SessionID(sess.Token)
	p := devicesPage{common: c}
	for _, in := range infos {
		d := device{
			ID: in.ID, Label: in.Label, This: in.ID == this,
			Created: in.Created.Local().Format(time.DateTime), LastSeen: in.LastSeen.Local().Format(time.DateTime),
		}
		if d.Label == "" {
			d.Label = "Unknown device"
		}
		p.Devices = append(p.Devices, d)
		p.Others = p.Others || !d.This
	}
	w.Header().Set("Cache-Control", "no-store")
	s.render(w, r, "devices", p)
}

// endDevice logs out one of the visitor's other sessions, by the ID the
// devices page gave; an ID that is not one of theirs does nothing.
func (s *shop) endDevice(w http.ResponseWriter, r *http.Request) {
	sess, ok := loggedIn(w, r)
	if !ok {
		return
	}
	id := r.PostFormValue("id")
	if err := s.endSessions(r, sess, func(other string) bool { return other == id }); err != nil {
		s.fail(w, r, err)
		return
	}
	s.flash(r.Context(), sess.Token, "That device is logged out.")
	http.Redirect(w, r, "/devices", http.StatusSeeOther)
}

// endOtherDevices logs out every session of the visitor but this one.
func (s *shop) endOtherDevices(w http.ResponseWriter, r *http.Request) {
	sess, ok := loggedIn(w, r)
	if !ok {
		return
	}
	if err := s.endSessions(r, sess, func(string) bool { return true }); err != nil {
		s.fail(w, r, err)
		return
	}
	// This device's session moves to a new token: a copy of its cookie
	// (taken off this browser) is another device too.
	renewed, err := s.sessions.Renew(r.Context(), w)
	if err != nil {
		if errors.Is(err, retail.ErrNoSession) {
			http.Redirect(w, r, "/", http.StatusSeeOther)
			return
		}
		s.fail(w, r, err)
		return
	}
	s.flash(r.Context(), renewed.Token, "Every other device is logged out.")
	http.Redirect(w, r, "/devices", http.StatusSeeOther)
}

// endSessions ends the sessions of sess's user that end picks, never sess
// itself. Going by UserSessions, a session that logs in meanwhile is kept.
func (s *shop) endSessions(r *http.Request, sess retailhttp.Session, end func(id string) bool) error {
	ctx := r.Context()
	infos, err := s.store.UserSessions(ctx, sess.User)
	if err != nil {
		return err
	}
	this := retail.SessionID(sess.Token)
	for _, in := range infos {
		if in.ID != this && end(in.ID) {
			if err := s.store.EndSession(ctx, in.ID); err != nil {
				return err
			}
		}
	}
	return nil
}
