"""The code location: every domain's definitions composed."""

from dagster import Definitions

from assets.indexing.assets import indexing_assets
from assets.indexing.jobs import index_job
from assets.resources import default_resources

defs = Definitions(
    assets=[*indexing_assets],
    jobs=[index_job],
    resources=default_resources(),
)
