# make install PREFIX=/usr/local   (DESTDIR is honoured for packaging)
# The Swift runtime is linked statically: the installed binary needs only the C libraries.
PREFIX ?= /usr/local
DESTDIR ?=
BINDIR = $(DESTDIR)$(PREFIX)/bin
MANDIR = $(DESTDIR)$(PREFIX)/share/man/man1
COMPLETIONDIR = $(DESTDIR)$(PREFIX)/share/bash-completion/completions
UNITDIR = $(DESTDIR)$(PREFIX)/lib/systemd/system
DOCDIR = $(DESTDIR)$(PREFIX)/share/doc/llmspool

.PHONY: build install uninstall deb test
build:
	swift build -c release --static-swift-stdlib --product llmspool

test:
	bash .ci/deps --test && swift test

install: build
	install -d $(BINDIR) $(MANDIR) $(COMPLETIONDIR) $(UNITDIR) $(DOCDIR)/samples
	# Stripped: the debug symbols are most of the statically linked binary's size.
	install -s -m 0755 "$$(swift build -c release --static-swift-stdlib --show-bin-path)/llmspool" $(BINDIR)/llmspool
	install -m 0644 doc/llmspool.1 $(MANDIR)/llmspool.1
	install -m 0644 packaging/llmspool.bash-completion $(COMPLETIONDIR)/llmspool
	sed 's|/usr/bin/llmspool|$(PREFIX)/bin/llmspool|' packaging/llmspool.service > $(UNITDIR)/llmspool.service
	chmod 0644 $(UNITDIR)/llmspool.service
	install -m 0644 README.md $(DOCDIR)/README.md
	install -m 0644 Config/llmspool.json $(DOCDIR)/config.example.json
	install -m 0644 spool/samples/*.json $(DOCDIR)/samples/

uninstall:
	rm -f $(BINDIR)/llmspool $(MANDIR)/llmspool.1 $(COMPLETIONDIR)/llmspool $(UNITDIR)/llmspool.service
	rm -rf $(DOCDIR)

deb:
	packaging/build-deb.sh
