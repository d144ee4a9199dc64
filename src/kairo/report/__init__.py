"""Reports: the runs of the results store (or a demo folder) as a static HTML site — an index,
a page per run, a comparison page per family and a page per sweep — and the demo's one-page
``report.html``. Pages are Jinja2 templates; figures are Matplotlib PNGs; every link is
relative, so a site opens from the file system and serves as it is (:func:`serve`, on
127.0.0.1 only)."""

from kairo.report._gather import RunView, demo_runs, select_runs, view_of_folder
from kairo.report._serve import make_server, serve
from kairo.report._site import FAMILY_PAGES, build_site, demo_report, write_site
from kairo.report._config import ReportConfig

__all__ = ["build_site", "write_site", "demo_report", "select_runs", "demo_runs",
           "view_of_folder", "RunView", "serve", "make_server", "FAMILY_PAGES",
           "ReportConfig"]
