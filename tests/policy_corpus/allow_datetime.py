# expect: allow
from datetime import datetime, timedelta, timezone
start = datetime(2024, 1, 1, tzinfo=timezone.utc)
days = [(start + timedelta(days=i)).strftime("%a") for i in range(7)]
print(days)
