// Package crafttest builds what only the tests need on top of the frames
// craft makes: tunnel encapsulations (Wrap), ERF records (ERF), IPv6
// extension headers (InsertIPv6Ext) and IP fragments (Fragment). It exists
// for tests, as net/http/httptest does for net/http: no command uses it, so
// craft's own API stays what `rdmacm-pd craft` and the tests' frame building
// need, and these helpers can grow with the tests without widening it.
package crafttest
