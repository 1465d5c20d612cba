# expect: deny network
import statsmodels.tools.web as web
web.webbrowser.open("http://example.invalid/")  # refused here
